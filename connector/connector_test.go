package connector

import (
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

type named string

func (n named) URN() string                       { return string(n) }
func (named) Decode(*Transform) (Config, []error) { return nil, nil }

func TestRegistry(t *testing.T) {
	r, err := NewRegistry(named("b"), named("a"))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := r.Lookup("a"); !ok || c != named("a") {
		t.Errorf("Lookup(a) = %v, %v", c, ok)
	}
	if _, ok := r.Lookup("c"); ok {
		t.Error("Lookup of an unknown URN found one")
	}
	if got := strings.Join(r.URNs(), " "); got != "a b" {
		t.Errorf("URNs() = %q", got)
	}
	if _, ok := (*Registry)(nil).Lookup("a"); ok {
		t.Error("a nil registry found a connector")
	}
	if _, err := NewRegistry(named("u"), named("u")); err == nil || !strings.Contains(err.Error(), "URN u is claimed by") {
		t.Errorf("two connectors of one URN: %v", err)
	}
	if _, err := NewRegistry(named("")); err == nil {
		t.Error("a connector without a URN was accepted")
	}
}

// view is a transform reading "in" (KV<string, bytes>) and writing "out"
// (KV<bytes, bytes> in fixed windows), which "reader" reads.
func view() *Transform {
	c := func(urn string, comps ...string) *pipepb.Coder {
		return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	}
	comps := &pipepb.Components{
		Coders: map[string]*pipepb.Coder{
			"b": c("beam:coder:bytes:v1"), "s": c("beam:coder:string_utf8:v1"),
			"kvbb": c("beam:coder:kv:v1", "b", "b"), "kvsb": c("beam:coder:kv:v1", "s", "b"),
			"gw": c("beam:coder:global_window:v1"), "iw": c("beam:coder:interval_window:v1"),
		},
		WindowingStrategies: map[string]*pipepb.WindowingStrategy{"global": {WindowCoderId: "gw"}, "fixed": {WindowCoderId: "iw"}},
		Pcollections: map[string]*pipepb.PCollection{
			"in":  {CoderId: "kvsb", WindowingStrategyId: "global"},
			"out": {CoderId: "kvbb", WindowingStrategyId: "fixed"},
		},
		Transforms: map[string]*pipepb.PTransform{
			"reader": {UniqueName: "Reader", Inputs: map[string]string{"x": "out"}},
			"comp":   {UniqueName: "Composite", Inputs: map[string]string{"x": "in"}, Subtransforms: []string{"reader"}},
		},
	}
	return &Transform{ID: "t", Proto: &pipepb.PTransform{UniqueName: "T", Inputs: map[string]string{"i": "in"},
		Outputs: map[string]string{"o": "out"}}, Components: comps}
}

func TestTransformChecks(t *testing.T) {
	v := view()
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for no error
	}{
		{"ports ok", v.Ports("a sink", 1, 1, 1), ""},
		{"ports", v.Ports("a source", 0, 1, 1), "a source needs no inputs and one output, has 1 and 1"},
		{"ports at most", v.Ports("a write", 2, 0, 1), "a write needs 2 inputs and at most one output, has 1 and 1"},
		{"kv bytes ok", v.CheckKVBytes("out"), ""},
		{"kv bytes", v.CheckKVBytes("in"), `PCollection "in" has coder "kvsb" (beam:coder:kv:v1<beam:coder:string_utf8:v1, beam:coder:bytes:v1>), not KV<bytes, bytes>`},
		{"kv bytes undefined", v.CheckKVBytes("nope"), `PCollection "nope" is not defined`},
		{"global ok", v.CheckGlobalWindow("in"), ""},
		{"global", v.CheckGlobalWindow("out"), `output PCollection "out" is not in the global window`},
	} {
		got := ""
		if tc.err != nil {
			got = tc.err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if r := v.ReaderOf("out"); r != "Reader" {
		t.Errorf("ReaderOf(out) = %q, want the leaf Reader", r)
	}
	if r := v.ReaderOf("in"); r != "" {
		t.Errorf("ReaderOf(in) = %q: a composite is not a reader", r)
	}
	if v.Name() != "T" || strings.Join(v.Inputs(), ",") != "in" || strings.Join(v.Outputs(), ",") != "out" {
		t.Errorf("Name, Inputs, Outputs = %q, %v, %v", v.Name(), v.Inputs(), v.Outputs())
	}
}
