package pgio

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
)

type sum struct {
	Key   string `beam:"key"`
	Total int64  `beam:"total"`
}

type small struct {
	Key string
	N   int16
}

// TestWriteEncodesRows: the transform carries the URN and the JSON
// payload, and its input's coder is Beam's row coder: the runner's side
// takes nothing else.
func TestWriteEncodesRows(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	Write(s, WriteConfig{Connection: "c", Table: "sums", Mode: ModeUpsert, Key: []string{"key"}}, beam.Create(s, sum{"a", 1}))
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, _ := graphx.CreateEnvironment(context.Background(), "beam:env:external:v1", func(context.Context) string { return "localhost:1" })
	pp, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tr := range pp.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() != WriteURN {
			continue
		}
		found = true
		cfg, err := DecodeWrite(tr.GetSpec().GetPayload())
		if err != nil || cfg.Table != "sums" {
			t.Errorf("payload: %+v, %v", cfg, err)
		}
		for _, in := range tr.GetInputs() {
			pc := pp.GetComponents().GetPcollections()[in]
			if urn := pp.GetComponents().GetCoders()[pc.GetCoderId()].GetSpec().GetUrn(); urn != "beam:coder:row:v1" {
				t.Errorf("input coder %s, want beam:coder:row:v1", urn)
			}
		}
	}
	if !found {
		t.Fatalf("no transform of %s in the pipeline", WriteURN)
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(s beam.Scope)
		want  string
	}{
		{"not a struct", func(s beam.Scope) { Write(s, WriteConfig{Connection: "c", Table: "t"}, beam.Create(s, "x")) }, "not of string"},
		{"int16", func(s beam.Scope) { Write(s, WriteConfig{Connection: "c", Table: "t"}, beam.Create(s, small{"a", 1})) }, "field N of pgio.small is int16"},
		{"key", func(s beam.Scope) {
			Write(s, WriteConfig{Connection: "c", Table: "t", Mode: ModeUpsert, Key: []string{"Key"}}, beam.Create(s, sum{"a", 1}))
		}, `key column "Key" is not written: the columns are ["key" "total"]`},
		{"config", func(s beam.Scope) { Write(s, WriteConfig{Table: "t"}, beam.Create(s, sum{"a", 1})) }, "no connection"},
	} {
		got := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			_, s := beam.NewPipelineWithRoot()
			c.build(s)
			return ""
		}()
		if !strings.Contains(got, "pgio.Write: ") || !strings.Contains(got, c.want) {
			t.Errorf("%s: panic %q, want one holding %q", c.name, got, c.want)
		}
	}
}
