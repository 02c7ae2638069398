package executor

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/triggers"
	"github.com/weir-runner/weir/wire"
)

// TriggeredGroupByKey groups KV elements by key and window and emits panes
// as the window's trigger says: after elements, when the watermark moves,
// when processing time moves. It keeps each window until the watermark
// passes its end plus the allowed lateness, then emits the final pane and
// forgets it; elements later than that, and elements for a window whose
// trigger has finished, are dropped and counted. In the global window a
// finished trigger starts over rather than closing it (see fire). The default trigger
// without allowed lateness does not come here: GroupByKey fires those
// groups once, from the shuffle buffer.
//
// Windows wait in memory; moving their values and trigger state into the
// store is the next step.
type TriggeredGroupByKey struct {
	Name            string
	In              *wire.Codec
	Key             wire.Measure
	OutputTime      pipepb.OutputTime_Enum
	Trigger         *triggers.Trigger
	Accumulating    bool
	AllowedLateness mtime.Time // milliseconds
	Out             *Output
	// Now reads the wall clock; nil means time.Now. Unused once a TestStream
	// drives processing time.
	Now func() time.Time

	// Late, if set, records arrival delays and every dropped element.
	Late *TransformLate

	// DroppedLate counts elements that arrived after their window expired;
	// DroppedClosed those that arrived after their window's trigger finished.
	DroppedLate, DroppedClosed int64

	windows   map[string]*trigWindow
	wm, outWM mtime.Time // input watermark; watermark passed downstream
	synthetic bool       // processing time comes from a TestStream
	pt        mtime.Time // synthetic processing time
	scratch   [][]byte
	out       [][]byte // panes waiting to be emitted
}

// trigWindow is one (key, window)'s buffered values and trigger state.
type trigWindow struct {
	key, window []byte
	maxTS       mtime.Time
	values      [][]byte
	minTS       mtime.Time // of the values since the last pane
	maxValTS    mtime.Time
	fresh       int // values since the last pane
	state       triggers.State
	panes       triggers.PaneTracker
	closed      bool
}

func (g *TriggeredGroupByKey) init() {
	if g.windows == nil {
		g.windows = map[string]*trigWindow{}
		g.wm, g.outWM = mtime.MinTimestamp, mtime.MinTimestamp
	}
}

func (g *TriggeredGroupByKey) now() mtime.Time {
	if g.synthetic {
		return g.pt
	}
	if g.Now != nil {
		return mtime.FromTime(g.Now())
	}
	return mtime.FromTime(time.Now())
}

func (g *TriggeredGroupByKey) ctx(w *trigWindow, now mtime.Time) triggers.Context {
	return triggers.Context{MaxTimestamp: w.maxTS, Watermark: g.wm, Now: now, SyncNow: now}
}

// expiry is the watermark past which a window is gone.
func (g *TriggeredGroupByKey) expiry(maxTS mtime.Time) mtime.Time {
	if maxTS >= mtime.MaxTimestamp-g.AllowedLateness {
		return mtime.MaxTimestamp
	}
	return maxTS + g.AllowedLateness
}

// Process implements Operator.
func (g *TriggeredGroupByKey) Process(ctx context.Context, _ int, elems [][]byte) error {
	g.init()
	now := g.now()
	dropped := g.DroppedLate + g.DroppedClosed
	for _, e := range elems {
		wv, k, v, err := decodeKV(g.Name, g.In, g.Key, e, g.scratch)
		if err != nil {
			return err
		}
		g.scratch = wv.Windows
		g.Late.arrival(wv.Timestamp, now)
		for _, win := range wv.Windows {
			if err := g.add(win, k, v, wv, now); err != nil {
				return err
			}
		}
	}
	if g.Late != nil && g.DroppedLate+g.DroppedClosed > dropped {
		if err := g.Late.Flush(); err != nil {
			return fmt.Errorf("group by key %s: %w", g.Name, err)
		}
	}
	return g.flush(ctx)
}

func (g *TriggeredGroupByKey) add(win, k, v []byte, wv wire.WindowedValue, now mtime.Time) error {
	ts := wv.Timestamp
	maxTS := wire.WindowMaxTimestamp(win)
	if g.expiry(maxTS) < g.wm {
		g.DroppedLate++
		return g.drop(DropLate, win, k, v, wv)
	}
	id := windowID(k, win)
	w := g.windows[id]
	if w == nil {
		w = &trigWindow{key: append([]byte(nil), k...), window: append([]byte(nil), win...),
			maxTS: maxTS, state: g.Trigger.NewState()}
		g.windows[id] = w
	}
	if w.closed {
		g.DroppedClosed++
		return g.drop(DropClosed, win, k, v, wv)
	}
	if w.fresh == 0 {
		w.minTS, w.maxValTS = ts, ts
	}
	w.minTS, w.maxValTS = min(w.minTS, ts), max(w.maxValTS, ts)
	w.fresh++
	w.values = append(w.values, append([]byte(nil), v...))
	c := g.ctx(w, now)
	g.Trigger.OnElement(&w.state, c)
	if g.Trigger.ShouldFire(&w.state, c) {
		g.fire(w, c)
	}
	return nil
}

func (g *TriggeredGroupByKey) drop(why DropReason, win, k, v []byte, wv wire.WindowedValue) error {
	return reportDrop(g.Name, g.Late, Dropped{Reason: why, Window: win, Timestamp: wv.Timestamp, Pane: wv.Pane,
		Key: k, Value: v, Watermark: g.wm, AllowedLateness: g.AllowedLateness})
}

func windowID(k, win []byte) string {
	b := binary.AppendUvarint(make([]byte, 0, len(k)+len(win)+2), uint64(len(k)))
	b = append(b, k...)
	return string(append(b, win...))
}

// fire runs the trigger's firing and emits the pane it makes.
//
// A finished trigger closes its window, as Beam's model says, except in the
// global window: that window never expires while the input runs, so closing
// it would drop every later element of the key for the life of the job. There
// the trigger starts over instead, and the pane is not the last.
func (g *TriggeredGroupByKey) fire(w *trigWindow, c triggers.Context) {
	g.Trigger.OnFire(&w.state, c)
	finished := w.state.Finished()
	if finished && w.maxTS == mtime.EndOfGlobalWindowTime {
		g.emitPane(w, false)
		w.state = g.Trigger.NewState()
		return
	}
	g.emitPane(w, finished)
	w.closed = finished
}

// emitPane emits the window's pane if new values arrived since the last
// one, and keeps or drops the values as the accumulation mode says.
func (g *TriggeredGroupByKey) emitPane(w *trigWindow, final bool) {
	if w.fresh > 0 {
		pane := w.panes.Next(w.maxTS, g.wm, g.outWM, final)
		g.out = append(g.out, g.encode(w, pane))
	}
	w.fresh = 0
	if !g.Accumulating || final {
		w.values = nil
	}
}

// evaluate asks every open window's trigger whether to fire, and expires
// windows the watermark has passed, in window order.
func (g *TriggeredGroupByKey) evaluate(now mtime.Time) {
	ids := make([]string, 0, len(g.windows))
	for id := range g.windows {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := g.windows[ids[i]], g.windows[ids[j]]
		if a.maxTS != b.maxTS {
			return a.maxTS < b.maxTS
		}
		return ids[i] < ids[j]
	})
	for _, id := range ids {
		w := g.windows[id]
		if g.expiry(w.maxTS) < g.wm {
			// Beam's garbage collection: the final pane holds what waits,
			// without asking the trigger.
			if !w.closed {
				g.emitPane(w, true)
			}
			delete(g.windows, id)
			continue
		}
		if w.closed {
			continue
		}
		if c := g.ctx(w, now); g.Trigger.ShouldFire(&w.state, c) {
			g.fire(w, c)
		}
	}
}

func (g *TriggeredGroupByKey) flush(ctx context.Context) error {
	if len(g.out) == 0 {
		return nil
	}
	out := g.out
	g.out = nil
	return g.Out.Emit(ctx, 0, out)
}

// Watermark implements Operator.
func (g *TriggeredGroupByKey) Watermark(ctx context.Context, _ int, wm mtime.Time) error {
	g.init()
	g.wm = wm
	g.evaluate(g.now())
	if err := g.flush(ctx); err != nil {
		return err
	}
	g.outWM = wm
	return g.Out.Watermark(ctx, wm)
}

// ProcessingTime implements ProcessingTimer: a TestStream moved the job's
// processing time.
func (g *TriggeredGroupByKey) ProcessingTime(ctx context.Context, t mtime.Time) error {
	g.init()
	g.synthetic, g.pt = true, t
	if g.Trigger.HasProcessingTime() {
		g.evaluate(t)
		if err := g.flush(ctx); err != nil {
			return err
		}
	}
	return g.Out.ProcessingTime(ctx, t)
}

// NextWake implements Waker: the earliest processing-time deadline of an
// open window, unless a TestStream drives processing time.
func (g *TriggeredGroupByKey) NextWake() (time.Time, bool) {
	if g.synthetic || !g.Trigger.HasProcessingTime() {
		return time.Time{}, false
	}
	best, ok := mtime.MaxTimestamp, false
	for _, w := range g.windows {
		if w.closed {
			continue
		}
		if d, has := g.Trigger.NextDeadline(&w.state); has && d < best {
			best, ok = d, true
		}
	}
	if !ok {
		return time.Time{}, false
	}
	return best.ToTime(), true
}

// Wake implements Waker.
func (g *TriggeredGroupByKey) Wake(ctx context.Context, now time.Time) error {
	g.init()
	if g.synthetic {
		return nil
	}
	g.evaluate(mtime.FromTime(now))
	return g.flush(ctx)
}

// encode writes KV<key, iterable<value>> in the window with the pane's
// info, stamped as the timestamp combiner says over the pane's new values.
func (g *TriggeredGroupByKey) encode(w *trigWindow, pane triggers.Pane) []byte {
	ts := w.maxTS
	switch g.OutputTime {
	case pipepb.OutputTime_EARLIEST_IN_PANE:
		ts = w.minTS
	case pipepb.OutputTime_LATEST_IN_PANE:
		ts = w.maxValTS
	}
	n := len(w.key) + 4
	for _, v := range w.values {
		n += len(v)
	}
	val := make([]byte, 0, n)
	val = append(val, w.key...)
	val = binary.BigEndian.AppendUint32(val, uint32(len(w.values)))
	for _, v := range w.values {
		val = append(val, v...)
	}
	return wire.AppendWindowedValue(make([]byte, 0, n+40), ts, w.window, triggers.AppendPane(nil, pane), val)
}

// Barrier implements Operator. Snapshots are not stored yet.
func (g *TriggeredGroupByKey) Barrier(context.Context, BarrierID) error { return nil }

// Finish implements Operator: every input ended, so the watermark reached
// the end of time and every window has expired.
func (g *TriggeredGroupByKey) Finish(context.Context) error { return nil }
