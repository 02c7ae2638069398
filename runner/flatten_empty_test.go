package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
)

// sideCount emits how many values its side input holds.
func sideCount(_ int, side func(*string) bool, emit func(int)) {
	n := 0
	var s string
	for side(&s) {
		n++
	}
	emit(n)
}

func init() {
	register.Function3x0(sideCount)
	register.Iter1[string]()
}

// emptyFlatten removes the inputs of the Flatten in scope "emptied", as Java's
// Flatten.pCollections() of an empty list sends it; the Go SDK cannot say
// that.
func emptyFlatten(t *testing.T) func(*pipepb.Pipeline) {
	return func(p *pipepb.Pipeline) {
		for _, tr := range p.GetComponents().GetTransforms() {
			if tr.GetSpec().GetUrn() == "beam:transform:flatten:v1" && strings.HasPrefix(tr.GetUniqueName(), "emptied/") {
				tr.Inputs = nil
				return
			}
		}
		t.Error("no Flatten in the pipeline")
	}
}

// TestEmptyFlatten runs a Flatten of no inputs as a side input: it is
// empty and complete from the start, so the ParDo reading it sees no
// value, rather than the job failing to build (a node with no input and no
// source) or waiting forever for the side input.
func TestEmptyFlatten(t *testing.T) {
	testHookPipeline = emptyFlatten(t)
	defer func() { testHookPipeline = nil }()
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	side := beam.Flatten(s.Scope("emptied"), beam.Create(s, "a"), beam.Create(s, "b"))
	counts := beam.ParDo(s, sideCount, beam.Create(s, 1, 2, 3), beam.SideInput{Input: side})
	passert.Equals(s, counts, 0, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := Execute(ctx, p); err != nil {
		t.Fatal(err)
	}
}
