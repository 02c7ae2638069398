package queries

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 0, pass-through: every event, after a round trip through its
// coder, so that the coder's cost is measured (Query0). Beam features:
// ParDo, a counter.
func init() {
	register.Function3x1(q0RoundTrip)
	register.Emitter1[model.Event]()
	add(Query{Name: "0", Title: "Pass through", Deterministic: true, Build: buildQ0})
}

var q0Bytes = beam.NewCounter("Query0", "bytes")

func buildQ0(s beam.Scope, _ config.Config, events beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("Query0.Serialize"), q0RoundTrip, events)
}

func q0RoundTrip(ctx context.Context, e model.Event, emit func(model.Event)) error {
	b := model.AppendEvent(nil, e)
	q0Bytes.Inc(ctx, int64(len(b)))
	out, err := model.DecodeEvent(b)
	if err != nil {
		return fmt.Errorf("Query0: %v did not survive its coder: %w", e, err)
	}
	emit(out)
	return nil
}
