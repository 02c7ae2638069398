package runner

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
)

// seqFn emits 0 to N-1, each with a payload, from 16 offset ranges that
// the runner sends several to a bundle, splits and checkpoints as it goes.
type seqFn struct{ N int64 }

func (f *seqFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: f.N}
}

func (*seqFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return r.EvenSplits(16)
}

func (*seqFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (*seqFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

// seqPayload makes each element large, so that a bundle's output passes
// the runner's limit (16 MiB) several times in a run.
var seqPayload = strings.Repeat("x", 4096)

func (*seqFn) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(int64, string)) {
	for n := rt.GetRestriction().(offsetrange.Restriction).Start; rt.TryClaim(n); n++ {
		emit(n, seqPayload)
	}
}

// onlyOnce fails the bundle when a key came more than once.
func onlyOnce(k int64, vs func(*string) bool) (int64, error) {
	var v string
	n := 0
	for vs(&v) {
		n++
	}
	if n != 1 {
		return 0, fmt.Errorf("key %d came %d times", k, n)
	}
	return k, nil
}

func init() {
	register.DoFn3x0[*sdf.LockRTracker, []byte, func(int64, string)](&seqFn{})
	register.Emitter2[int64, string]()
	register.Iter1[string]()
	register.Function2x2(onlyOnce)
	beam.RegisterType(reflect.TypeOf((*seqFn)(nil)).Elem())
}

// TestSDFOutputOnceThroughSplits: an SDF whose buffered output passes the
// bundle output limit many times over is checkpointed and split as it
// runs; every element still reaches the group-by-key exactly once. With
// several restrictions in a bundle, a checkpoint asked as fraction 0 made
// the Go SDK name the restriction it was processing as the residual's
// first about half the time (checkpointFraction in package executor), and
// one key in 16 or so came twice.
func TestSDFOutputOnceThroughSplits(t *testing.T) {
	const n = 40_000 // 160 MB of output
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	kvs := beam.ParDo(s, &seqFn{N: n}, beam.Impulse(s))
	passert.Count(s, beam.ParDo(s, onlyOnce, beam.GroupByKey(s, kvs)), "keys", n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := Execute(ctx, p); err != nil {
		t.Fatal(err)
	}
}
