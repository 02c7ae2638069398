package executor

import (
	"context"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// Operator is one subtask's logic. The executor calls it from one goroutine.
type Operator interface {
	// Process handles a batch of elements that arrived on an input port.
	Process(ctx context.Context, port int, elems [][]byte) error
	// Watermark reports that port's input watermark advanced to wm.
	Watermark(ctx context.Context, port int, wm mtime.Time) error
	// Barrier asks for a snapshot: every input has delivered barrier id and
	// nothing after it has been processed. The executor forwards the barrier
	// downstream after Barrier returns.
	Barrier(ctx context.Context, id BarrierID) error
	// Finish is called once when every input has ended. The executor ends
	// the outputs after it returns.
	Finish(ctx context.Context) error
}

// ProcessingTimer is implemented by operators that act on processing time
// (processing-time timers and triggers) when the job's processing time is
// synthetic. The gate calls it when the minimum processing time over all
// input channels advances; operators that do not implement it pass the
// processing time on unchanged. Implementations forward it themselves
// (Output.ProcessingTime) once they have acted on it.
type ProcessingTimer interface {
	ProcessingTime(ctx context.Context, t mtime.Time) error
}

// Waker is implemented by operators that act at wall-clock instants:
// processing-time timers. The subtask's loop wakes the operator at the
// instant NextWake returns, between messages.
type Waker interface {
	NextWake() (time.Time, bool)
	Wake(ctx context.Context, now time.Time) error
}

// Capabilities are the optional interfaces the executor finds on an
// Operator by type assertion. An operator that wraps another must forward
// every one of them, or the wrapped operator silently loses what it does
// (the classic form: net/http ResponseWriter wrappers that hide Flusher).
// twophase.StableInput's tests walk this list, and
// TestCapabilitiesListed fails when the executor or the runner asserts an
// interface on operators that is not on it.
var Capabilities = []reflect.Type{
	reflect.TypeFor[ProcessingTimer](),
	reflect.TypeFor[Waker](),
	reflect.TypeFor[StateSnapshotter](),
	reflect.TypeFor[StateRestorer](),
	reflect.TypeFor[CheckpointListener](),
	reflect.TypeFor[Detacher](),
}

// Source is an operator without inputs: it produces until done, and
// injects barriers it is sent between its outputs.
type Source interface {
	// Run produces the source's output. It must call inject.Poll between
	// emissions so barriers enter the stream promptly; Poll forwards any
	// pending barriers and acknowledges them. The executor ends the outputs
	// after Run returns.
	Run(ctx context.Context, out *Output, inject *Injector) error
}
