// Package connectortest helps test connectors' Decode and placement
// through translate, as a job's submission reaches them.
package connectortest

import (
	"context"
	"sort"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/translate"
)

// Pipeline builds a Go SDK pipeline with build and returns its proto, as a
// job submits it, with an EXTERNAL environment.
func Pipeline(t testing.TB, build func(s beam.Scope)) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	build(s)
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := graphx.CreateEnvironment(context.Background(), "beam:env:external:v1",
		func(context.Context) string { return "localhost:1" })
	if err != nil {
		t.Fatal(err)
	}
	pp, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

// Build translates p with the connectors cs.
func Build(t testing.TB, p *pipepb.Pipeline, cs ...connector.Connector) (*translate.Plan, error) {
	t.Helper()
	reg, err := connector.NewRegistry(cs...)
	if err != nil {
		t.Fatal(err)
	}
	return translate.Build(p, translate.Options{Connectors: reg})
}

// Find returns the ID and transform of p's first transform (by ID) of urn.
func Find(p *pipepb.Pipeline, urn string) (string, *pipepb.PTransform) {
	ids := make([]string, 0, len(p.GetComponents().GetTransforms()))
	for id := range p.GetComponents().GetTransforms() {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if tr := p.Components.Transforms[id]; tr.GetSpec().GetUrn() == urn {
			return id, tr
		}
	}
	return "", nil
}

// Only returns the value of a map of one entry (a transform's one input
// or output).
func Only(m map[string]string) string {
	for _, v := range m {
		return v
	}
	return ""
}

// Natives returns the plan's connector stages.
func Natives(plan *translate.Plan) []*translate.Stage {
	var out []*translate.Stage
	for _, s := range plan.Stages {
		if s.Kind == translate.KindNative {
			out = append(out, s)
		}
	}
	return out
}
