package executor

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/wire"
)

// Impulse emits one element, an empty byte array in the global window at
// the minimum timestamp, then advances its watermark to the end of time.
type Impulse struct{}

// impulseElem is that element: timestamp, one global window, no-firing
// pane, and a bytes value of length zero.
var impulseElem = wire.AppendWindowedValue(nil, mtime.MinTimestamp, nil, []byte{wire.PaneNoFiring}, []byte{0})

// Run implements Source.
func (Impulse) Run(ctx context.Context, out *Output, inj *Injector) error {
	fired := false
	if b := inj.Restored(); b != nil {
		var st struct {
			Fired bool `json:"fired"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("impulse: restore %q: %w", b, err)
		}
		fired = st.Fired
	}
	// A restored job must not fire Impulse again: what it started is in
	// the snapshot downstream.
	inj.OnSnapshot(func() ([]byte, error) {
		if fired {
			return []byte(`{"fired":true}`), nil
		}
		return []byte(`{"fired":false}`), nil
	})
	if _, err := inj.Poll(); err != nil {
		return err
	}
	if !fired {
		if err := out.Emit(ctx, 0, [][]byte{impulseElem}); err != nil {
			return err
		}
		fired = true
	}
	if _, err := inj.Poll(); err != nil {
		return err
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

// Empty is the source of a flatten of no inputs: it emits nothing and
// moves its watermark to the end of time at once, so what reads it (often
// a side input) is complete from the start.
type Empty struct{}

// Run implements Source.
func (Empty) Run(ctx context.Context, out *Output, inj *Injector) error {
	if _, err := inj.Poll(); err != nil {
		return err
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

// Flatten merges its inputs into output 0. Its watermark is the minimum of
// its inputs', which the gate computes over all channels of port 0.
type Flatten struct{ Out *Output }

// Process implements Operator.
func (f *Flatten) Process(ctx context.Context, _ int, elems [][]byte) error {
	return f.Out.Emit(ctx, 0, elems)
}

// Watermark implements Operator.
func (f *Flatten) Watermark(ctx context.Context, _ int, wm mtime.Time) error {
	return f.Out.Watermark(ctx, wm)
}

// Barrier implements Operator: a flatten has no state.
func (f *Flatten) Barrier(context.Context, BarrierID) error { return nil }

// Finish implements Operator.
func (f *Flatten) Finish(context.Context) error { return nil }
