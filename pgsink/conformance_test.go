package pgsink

import (
	"encoding/json"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector/conformance"
	"github.com/weir-runner/weir/internal/pgtest"
	"github.com/weir-runner/weir/pgio"
	"github.com/weir-runner/weir/twophase"
)

// pgHarness is a PostgreSQL sink inserting rows (v text) into table "out"
// of a schema of its own, as subtask 0 of a job.
type pgHarness struct {
	t    *testing.T
	db   *pgtest.DB
	plan *Plan
}

func newPGHarness(t *testing.T) conformance.SinkHarness {
	db := pgtest.New(t)
	db.Exec(t, `CREATE TABLE out (v text NOT NULL)`)
	payload, err := json.Marshal(pgio.WriteConfig{Connection: db.URL, Table: "out"})
	if err != nil {
		t.Fatal(err)
	}
	plan, errs := NewPlan(payload, rowCoder(t, schemaOf("v", atomic(pipepb.AtomicType_STRING, false))), "write")
	if errs != nil {
		t.Fatal(errs)
	}
	return &pgHarness{t: t, db: db, plan: plan}
}

func (h *pgHarness) New(testing.TB) twophase.Sink {
	s := h.plan.NewSink("write", 0, globalCodec(h.t), nil)
	s.Backoff = noWait
	// A crashed instance is dropped without a word; its connection goes
	// with the test.
	h.t.Cleanup(func() { s.Close() })
	return s
}

func (h *pgHarness) Element(v string) []byte { return element(encodeRow(v)) }

// Committed reads the table, as any reader sees it: committed rows only.
func (h *pgHarness) Committed(t testing.TB) []string { return h.db.Strings(t, `SELECT v FROM out`) }

func TestConformance(t *testing.T) {
	conformance.RunSink(t, "postgres", newPGHarness)
}
