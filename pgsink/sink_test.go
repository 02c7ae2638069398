package pgsink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/internal/pgtest"
	"github.com/weir-runner/weir/pgio"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/twophase/twophasetest"
)

// The rows of most tests: (id, name).
var idName = schemaOf("id", atomic(pipepb.AtomicType_INT64, false), "name", atomic(pipepb.AtomicType_STRING, true))

func rows(kv ...any) [][]byte {
	var out [][]byte
	for i := 0; i < len(kv); i += 2 {
		out = append(out, element(encodeRow(kv[i], kv[i+1])))
	}
	return out
}

// fixture is a test's database and the plan of its write.
type fixture struct {
	t       testing.TB
	db      *pgtest.DB
	plan    *Plan
	retries []string
}

func newFixture(t *testing.T, cfg pgio.WriteConfig, s *pipepb.Schema) *fixture {
	db := pgtest.New(t)
	return newFixtureOn(t, db, cfg, s)
}

func newFixtureOn(t testing.TB, db *pgtest.DB, cfg pgio.WriteConfig, s *pipepb.Schema) *fixture {
	t.Helper()
	if cfg.Connection == "" {
		cfg.Connection = db.URL
	}
	payload, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	plan, errs := NewPlan(payload, rowCoder(t, s), "write")
	if errs != nil {
		t.Fatal(errs)
	}
	return &fixture{t: t, db: db, plan: plan}
}

// driver runs subtask 0's sink over store, as the runner does.
func (f *fixture) driver(store *state.Store) (*twophase.Driver, *Sink) {
	s := f.plan.NewSink("write", 0, globalCodec(f.t), func(err error) { f.retries = append(f.retries, err.Error()) })
	s.Backoff = noWait
	return &twophase.Driver{Sink: s, Pending: twophase.NewPending(store, "pg/0", "pg[0]"), Name: s.Name,
		OnRetry: func(err error) { f.retries = append(f.retries, err.Error()) }, Backoff: noWait}, s
}

func noWait(int) time.Duration { return 0 }

func (f *fixture) table(sql string) []string {
	f.t.Helper()
	return f.db.Strings(f.t, sql)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func want(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: %q, want %q", what, got, want)
	}
}

// TestInsertAtCheckpoints: rows are visible only once the checkpoint
// after them completes, one transaction per commit, and at the end of
// the input the open epoch is committed too.
func TestInsertAtCheckpoints(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgio.WriteConfig{Table: "people"}, idName)
	f.db.Exec(t, `CREATE TABLE people (id bigint, name text)`)
	d, s := f.driver(twophasetest.Store(t))
	const q = `SELECT id, name FROM people ORDER BY id`

	must(t, d.Process(ctx, 0, rows(int64(1), "ann", int64(2), nil)))
	must(t, d.Barrier(ctx, 1))
	must(t, d.Process(ctx, 0, rows(int64(3), "cy")))
	want(t, "before any checkpoint completes", f.table(q))
	must(t, d.CheckpointComplete(ctx, 1))
	want(t, "after checkpoint 1", f.table(q), "1 ann", "2 <nil>")
	must(t, d.Barrier(ctx, 2))
	must(t, d.Process(ctx, 0, rows(int64(4), "di")))
	must(t, d.Finish(ctx))
	want(t, "at the end", f.table(q), "1 ann", "2 <nil>", "3 cy", "4 di")
	if s.Committed != 4 {
		t.Errorf("Committed = %d, want 4", s.Committed)
	}
	want(t, "markers", f.table(`SELECT sink, epoch FROM weir_sink_markers`), "people/write[0] 3")
}

// TestUpsertLastWins: an upsert replaces the table's row of a key with
// the last row of that key, across epochs and within one.
func TestUpsertLastWins(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgio.WriteConfig{Table: "people", Mode: pgio.ModeUpsert, Key: []string{"id"}}, idName)
	f.db.Exec(t, `CREATE TABLE people (id bigint PRIMARY KEY, name text)`)
	f.db.Exec(t, `INSERT INTO people VALUES (1, 'old'), (9, 'kept')`)
	d, _ := f.driver(twophasetest.Store(t))

	must(t, d.Process(ctx, 0, rows(int64(1), "a1", int64(2), "b1", int64(1), "a2")))
	must(t, d.Barrier(ctx, 1))
	must(t, d.Process(ctx, 0, rows(int64(2), "b2", int64(3), "c1")))
	must(t, d.Process(ctx, 0, rows(int64(2), "b3")))
	must(t, d.Barrier(ctx, 2))
	// Both epochs in one commit: the later epoch's row of key 2 wins.
	must(t, d.CheckpointComplete(ctx, 2))
	want(t, "table", f.table(`SELECT id, name FROM people ORDER BY id`), "1 a2", "2 b3", "3 c1", "9 kept")
	must(t, d.Process(ctx, 0, rows(int64(3), nil)))
	must(t, d.Finish(ctx))
	want(t, "table", f.table(`SELECT id, name FROM people ORDER BY id`), "1 a2", "2 b3", "3 <nil>", "9 kept")
}

// TestUpsertCompositeKey: a key of two columns, and a table whose every
// column is in the key (nothing to update: DO NOTHING).
func TestUpsertCompositeKey(t *testing.T) {
	ctx := context.Background()
	s := schemaOf("day", atomic(pipepb.AtomicType_STRING, false), "ad", atomic(pipepb.AtomicType_INT64, false))
	f := newFixture(t, pgio.WriteConfig{Table: "seen", Mode: pgio.ModeUpsert, Key: []string{"ad", "day"}}, s)
	f.db.Exec(t, `CREATE TABLE seen (day text, ad bigint, UNIQUE (day, ad))`)
	d, _ := f.driver(twophasetest.Store(t))
	must(t, d.Process(ctx, 0, rows("mon", int64(1), "mon", int64(1), "tue", int64(1))))
	must(t, d.Finish(ctx))
	want(t, "table", f.table(`SELECT day, ad FROM seen ORDER BY day`), "mon 1", "tue 1")
}

// TestCommitTwiceWritesOnce: committing the same committables again (a
// retry after a commit whose reply was lost) writes nothing.
func TestCommitTwiceWritesOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgio.WriteConfig{Table: "people"}, idName)
	f.db.Exec(t, `CREATE TABLE people (id bigint, name text)`)
	store := twophasetest.Store(t)
	_, s := f.driver(store)
	pending := twophase.NewPending(store, "pg/0", "pg[0]")
	const run = "run1"
	must(t, s.Open(ctx, twophase.Session{Lineage: "l", Run: run, Staging: pending}))
	defer s.Close()
	must(t, s.Write(ctx, 0, rows(int64(1), "a")))
	c0, err := s.Prepare(ctx, 0)
	must(t, err)
	must(t, s.Write(ctx, 1, rows(int64(2), "b")))
	c1, err := s.Prepare(ctx, 1)
	must(t, err)
	cs := []twophase.Committable{{Epoch: 0, Run: run, Data: c0}, {Epoch: 1, Run: run, Data: c1}}
	must(t, s.Commit(ctx, cs[:1]))
	must(t, s.Commit(ctx, cs))
	must(t, s.Commit(ctx, cs))
	want(t, "table", f.table(`SELECT id FROM people ORDER BY id`), "1", "2")
	if s.Committed != 2 {
		t.Errorf("Committed = %d, want 2", s.Committed)
	}
}

// TestRestoreRecommits: a crash after the commit of checkpoint 1 but
// before its committables left the store restores them; the restored
// sink commits them again, and the marker makes that write nothing.
// What the crashed run staged after checkpoint 1 is never written: its
// input is replayed into the new run.
func TestRestoreRecommits(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgio.WriteConfig{Table: "people"}, idName)
	f.db.Exec(t, `CREATE TABLE people (id bigint, name text)`)
	store := twophasetest.Store(t)
	d, _ := f.driver(store)
	must(t, d.Process(ctx, 0, rows(int64(1), "a")))
	must(t, d.Barrier(ctx, 1))
	restore := twophasetest.Checkpoint(t, store, "pg/0") // checkpoint 1 holds epoch 0's committable
	must(t, d.CheckpointComplete(ctx, 1))
	must(t, d.Process(ctx, 0, rows(int64(2), "lost")))
	must(t, d.Barrier(ctx, 2)) // epoch 1 prepared, checkpoint 2 never completes: crash

	r, rs := f.driver(restore())
	must(t, r.Process(ctx, 0, rows(int64(2), "b"))) // the replay
	must(t, r.Barrier(ctx, 2))
	must(t, r.CheckpointComplete(ctx, 2))
	want(t, "table", f.table(`SELECT id, name FROM people ORDER BY id`), "1 a", "2 b")
	if rs.Committed != 1 {
		t.Errorf("the restored sink wrote %d rows, want 1 (epoch 0 again is a no-op)", rs.Committed)
	}
	must(t, r.Finish(ctx))
}

// TestConnectionLostIsRetried: the server ends the sink's connection
// between commits; the next commit fails, is retried on a new connection,
// and writes its rows once.
func TestConnectionLostIsRetried(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgio.WriteConfig{Table: "people"}, idName)
	f.db.Exec(t, `CREATE TABLE people (id bigint, name text)`)
	d, s := f.driver(twophasetest.Store(t))
	must(t, d.Process(ctx, 0, rows(int64(1), "a")))
	must(t, d.Barrier(ctx, 1))
	f.db.Exec(t, `SELECT pg_terminate_backend($1)`, s.db.conn.PgConn().PID())
	must(t, d.CheckpointComplete(ctx, 1))
	want(t, "table", f.table(`SELECT id FROM people`), "1")
	if len(f.retries) == 0 {
		t.Errorf("no retry reported; the first commit should have failed on the ended connection")
	}
	must(t, d.Finish(ctx))
}

// TestUnreachableServerIsRetried: a server that cannot be reached at
// Open is retried (reported each time) until the job's context ends; the
// error is not Permanent.
func TestUnreachableServerIsRetried(t *testing.T) {
	db := pgtest.New(t)
	f := newFixtureOn(t, db, pgio.WriteConfig{Connection: "postgres://postgres@127.0.0.1:1/weir?sslmode=disable&connect_timeout=1", Table: "people"}, idName)
	ctx, cancel := context.WithCancel(context.Background())
	d, _ := f.driver(twophasetest.Store(t))
	d.Sink.(*Sink).OnRetry = func(err error) {
		f.retries = append(f.retries, err.Error())
		if len(f.retries) == 3 {
			cancel()
		}
	}
	err := d.Process(ctx, 0, nil)
	if err == nil || twophase.IsPermanent(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v; want the context's, not Permanent", err)
	}
	if len(f.retries) != 3 || !strings.Contains(f.retries[0], "connect") {
		t.Errorf("retries %q; want 3 naming the connection", f.retries)
	}
}

// TestOpenRefuses: what is wrong with the table fails the job at Open,
// Permanent, naming the table and what is missing.
func TestOpenRefuses(t *testing.T) {
	db := pgtest.New(t)
	db.Exec(t, `CREATE TABLE people (id bigint, name text)`)
	db.Exec(t, `CREATE VIEW people_v AS SELECT * FROM people`)
	for _, c := range []struct {
		name string
		cfg  pgio.WriteConfig
		want string
	}{
		{"no table", pgio.WriteConfig{Table: "nobody"}, `table "nobody" does not exist`},
		{"no schema", pgio.WriteConfig{Table: "nowhere.people"}, `table "nowhere"."people" does not exist`},
		{"a view", pgio.WriteConfig{Table: "people_v"}, `"people_v" is not a table`},
		{"no column", pgio.WriteConfig{Table: "people", Columns: map[string]string{"name": "full_name"}}, `has no column ["full_name"]`},
		{"no unique key", pgio.WriteConfig{Table: "people", Mode: pgio.ModeUpsert, Key: []string{"id"}}, `no unique index or primary key on exactly the key columns ["id"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixtureOn(t, db, c.cfg, idName)
			d, _ := f.driver(twophasetest.Store(t))
			err := d.Process(context.Background(), 0, nil)
			if err == nil || !twophase.IsPermanent(err) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v; want a Permanent one holding %q", err, c.want)
			}
			if len(f.retries) > 0 {
				t.Errorf("retried %q; a missing table is not retried", f.retries)
			}
		})
	}
}

// TestDuplicateKeyFailsTheJob: an insert that breaks a unique constraint
// is Permanent, names the table and says what upsert would do; nothing of
// the commit is written.
func TestDuplicateKeyFailsTheJob(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgio.WriteConfig{Table: "people"}, idName)
	f.db.Exec(t, `CREATE TABLE people (id bigint PRIMARY KEY, name text)`)
	f.db.Exec(t, `INSERT INTO people VALUES (2, 'there')`)
	d, _ := f.driver(twophasetest.Store(t))
	must(t, d.Process(ctx, 0, rows(int64(1), "a", int64(2), "b")))
	must(t, d.Barrier(ctx, 1))
	err := d.CheckpointComplete(ctx, 1)
	if err == nil || !twophase.IsPermanent(err) || !strings.Contains(err.Error(), `"people"`) || !strings.Contains(err.Error(), "upsert") {
		t.Fatalf("error %v; want a Permanent one naming the table and upsert", err)
	}
	if len(f.retries) > 0 {
		t.Errorf("retried %q", f.retries)
	}
	want(t, "table", f.table(`SELECT id, name FROM people ORDER BY id`), "2 there")
}

// TestTypes: every field type lands in its column.
func TestTypes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgio.WriteConfig{Table: "types"}, allTypes())
	f.db.Exec(t, `CREATE TABLE types (b smallint, i16 smallint, i32 integer, i64 bigint, f32 real, f64 double precision,
		s text, ok boolean, raw bytea, at timestamptz, n bigint)`)
	d, _ := f.driver(twophasetest.Store(t))
	at := time.Date(2026, 12, 2, 10, 0, 0, 123e6, time.UTC)
	must(t, d.Process(ctx, 0, [][]byte{
		element(encodeRow(uint8(200), int16(-300), int32(-5), int64(-1<<40), float32(1.5), 2.25, "héllo", true, []byte{0, 1}, at, int64(7))),
		element(encodeRow(uint8(0), int16(0), int32(0), int64(0), float32(0), 0.0, "", false, []byte{}, time.UnixMilli(0), nil)),
	}))
	must(t, d.Finish(ctx))
	want(t, "table", f.table(`SELECT b, i16, i32, i64, f32, f64, s, ok, encode(raw, 'hex'), to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'), n FROM types ORDER BY b`),
		"0 0 0 0 0 0  false  1970-01-01 00:00:00.000 <nil>",
		fmt.Sprint("200 -300 -5 ", int64(-1<<40), " 1.5 2.25 héllo true 0001 2026-12-02 10:00:00.123 7"))
}

// TestRestoreOlderCheckpoint: a job restored from a checkpoint older than
// its last commit (a savepoint taken earlier) numbers its epochs again
// from there, under a new run. Its epochs are written though an earlier
// run committed the same numbers, so nothing is lost; what was committed
// after the checkpoint is written again, which an upsert absorbs.
func TestRestoreOlderCheckpoint(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, pgio.WriteConfig{Table: "people", Mode: pgio.ModeUpsert, Key: []string{"id"}}, idName)
	f.db.Exec(t, `CREATE TABLE people (id bigint PRIMARY KEY, name text)`)
	store := twophasetest.Store(t)
	d, _ := f.driver(store)
	must(t, d.Process(ctx, 0, rows(int64(1), "a")))
	must(t, d.Barrier(ctx, 1))
	old := twophasetest.Checkpoint(t, store, "pg/0")
	must(t, d.CheckpointComplete(ctx, 1))
	must(t, d.Process(ctx, 0, rows(int64(2), "b")))
	must(t, d.Barrier(ctx, 2))
	must(t, d.CheckpointComplete(ctx, 2))
	must(t, d.Process(ctx, 0, rows(int64(3), "c")))
	must(t, d.Barrier(ctx, 3))
	must(t, d.CheckpointComplete(ctx, 3))
	want(t, "before the restore", f.table(`SELECT id, name FROM people ORDER BY id`), "1 a", "2 b", "3 c")

	// Restored from checkpoint 1: the replay brings epochs 1 and 2 again,
	// with new values, under the numbers the first run committed.
	r, _ := f.driver(old())
	must(t, r.Process(ctx, 0, rows(int64(2), "b2")))
	must(t, r.Barrier(ctx, 2))
	must(t, r.Process(ctx, 0, rows(int64(3), "c2", int64(4), "d")))
	must(t, r.Barrier(ctx, 3))
	must(t, r.CheckpointComplete(ctx, 3))
	want(t, "after the restore", f.table(`SELECT id, name FROM people ORDER BY id`), "1 a", "2 b2", "3 c2", "4 d")
	if runs := f.table(`SELECT count(*) FROM weir_sink_markers`); runs[0] != "2" {
		t.Errorf("%s runs have markers, want 2", runs[0])
	}
	must(t, r.Finish(ctx))
}
