package translate

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector"
)

// fakeConnector claims the URN of the pipeline's Impulse, as a connector
// of a source would, and counts its decodes.
type fakeConnector struct {
	urn     string
	decodes map[string]int
	errs    []error
}

func (f *fakeConnector) URN() string { return f.urn }

func (f *fakeConnector) Decode(t *connector.Transform) (connector.Config, []error) {
	f.decodes[t.ID]++
	if f.errs != nil {
		return nil, f.errs
	}
	return fakeConfig{payload: string(t.Payload())}, nil
}

type fakeConfig struct{ payload string }

func (fakeConfig) Placement() connector.Placement { return connector.Placement{Parallelism: 1} }
func (fakeConfig) Build(*connector.BuildContext) (connector.Node, error) {
	return connector.Node{}, nil
}

func nativePipeline(t *testing.T) *pipepb.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo0(s, func([]byte) {}, beam.Impulse(s))
	pp := marshal(t, p)
	for _, tr := range pp.Components.Transforms {
		if tr.GetSpec().GetUrn() == URNImpulse {
			tr.Spec = &pipepb.FunctionSpec{Urn: "example:transform:source:v1", Payload: []byte("cfg")}
		}
	}
	return pp
}

// TestNativeStage: a transform a connector claims is decoded once and
// placed in a stage of its own that carries the decoded configuration;
// translate knows nothing else of it.
func TestNativeStage(t *testing.T) {
	f := &fakeConnector{urn: "example:transform:source:v1", decodes: map[string]int{}}
	plan, err := Build(nativePipeline(t), Options{Connectors: connector.MustRegistry(f)})
	if err != nil {
		t.Fatal(err)
	}
	var natives []*Stage
	for _, s := range plan.Stages {
		if s.Kind == KindNative {
			natives = append(natives, s)
		}
	}
	if len(natives) != 1 || natives[0].URN != f.urn || natives[0].Native != (fakeConfig{payload: "cfg"}) ||
		len(natives[0].Inputs) != 0 || len(natives[0].Outputs) != 1 {
		t.Fatalf("native stages %+v, want one source with the decoded config", natives)
	}
	for id, n := range f.decodes {
		if n != 1 {
			t.Errorf("transform %s decoded %d times, want once", id, n)
		}
	}
	if len(f.decodes) != 1 {
		t.Errorf("decoded %v, want one transform", f.decodes)
	}
}

// TestNativeRefused: a connector's errors are reported, each naming the
// transform and URN; without the connector, the URN is refused.
func TestNativeRefused(t *testing.T) {
	f := &fakeConnector{urn: "example:transform:source:v1", decodes: map[string]int{},
		errs: []error{errors.New("no topic"), errors.New("bad coder")}}
	_, err := Build(nativePipeline(t), Options{Connectors: connector.MustRegistry(f)})
	if err == nil {
		t.Fatal("built")
	}
	for _, want := range []string{"(example:transform:source:v1): no topic", "(example:transform:source:v1): bad coder"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	_, err = Build(nativePipeline(t), Options{})
	if err == nil || !strings.Contains(err.Error(), "(example:transform:source:v1): transform URN is not supported") {
		t.Errorf("Build without the connector = %v", err)
	}
}
