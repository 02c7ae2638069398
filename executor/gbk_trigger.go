package executor

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/triggers"
	"github.com/weir-runner/weir/wire"
)

// TriggeredGroupByKey groups KV elements by key and window and emits panes
// as the window's trigger says: after elements, when the watermark moves,
// when processing time moves. It keeps each window until the watermark
// passes its end plus the allowed lateness, then emits the final pane and
// forgets it; elements later than that, and elements for a window whose
// trigger has finished, are dropped and counted. In the global window a
// finished trigger starts over rather than closing it (see fire). With
// merging windows (sessions) each element's window merges at once with the
// key's windows it meets, their values and trigger states merged as Beam's
// OnMerge says. The default trigger without allowed lateness does not come
// here: GroupByKey fires those groups once, from the shuffle buffer.
//
// Windows, their values and their trigger state live in Windows (the job's
// store), not in Go memory; only processing-time deadlines are kept in
// memory, one per window that has one.
type TriggeredGroupByKey struct {
	Name            string
	In              *wire.Codec
	Key             wire.Measure
	OutputTime      pipepb.OutputTime_Enum
	Trigger         *triggers.Trigger
	Accumulating    bool
	Merging         bool       // sessions: windows are interval windows that merge
	AllowedLateness mtime.Time // milliseconds
	// FinalAlways (the windowing strategy's closing behavior EMIT_ALWAYS)
	// emits the final pane when the window expires even if nothing arrived
	// since the last pane; OnTimeAlways (on-time behavior FIRE_ALWAYS) does
	// the same for the on-time pane. Both are what Java sets by default for
	// the on-time pane, and what tests of accumulated panes read.
	FinalAlways, OnTimeAlways bool
	Windows                   TriggerWindows
	Out                       *Output
	// Now reads the wall clock; nil means time.Now. Unused once a TestStream
	// drives processing time.
	Now func() time.Time

	// Late, if set, records arrival delays and every dropped element.
	Late *TransformLate

	// DroppedLate counts elements that arrived after their window expired;
	// DroppedClosed those that arrived after their window's trigger finished.
	DroppedLate, DroppedClosed int64

	started   bool
	deadlines deadlines
	wm, outWM mtime.Time // input watermark; watermark passed downstream
	synthetic bool       // processing time comes from a TestStream
	pt        mtime.Time // synthetic processing time
	scratch   [][]byte
	meta, val []byte   // scratch for encoding
	out       [][]byte // panes waiting to be emitted
}

func (g *TriggeredGroupByKey) init() error {
	if g.started {
		return nil
	}
	if g.Windows == nil {
		return fmt.Errorf("group by key %s: no store for its windows", g.Name)
	}
	g.started = true
	g.wm, g.outWM = mtime.MinTimestamp, mtime.MinTimestamp
	return g.rebuild()
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
	return triggers.Context{MaxTimestamp: w.id.End, Watermark: g.wm, Now: now, SyncNow: now, Merging: g.Merging}
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
	if err := g.init(); err != nil {
		return err
	}
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
	maxTS := wire.WindowMaxTimestamp(win)
	if g.expiry(maxTS) < g.wm {
		g.DroppedLate++
		return g.drop(DropLate, win, k, v, wv)
	}
	id := state.WindowID{KeyGroup: KeyGroup(k), End: maxTS, Key: k, Window: win}
	var w *trigWindow
	var err error
	if g.Merging {
		w, err = g.mergeInto(id, now)
	} else {
		w, err = g.open(id)
	}
	if err != nil {
		return err
	}
	if w.closed {
		if err := g.saveIfNew(w); err != nil {
			return err
		}
		g.DroppedClosed++
		return g.drop(DropClosed, win, k, v, wv)
	}
	ts := wv.Timestamp
	if w.fresh == 0 {
		w.minTS, w.maxValTS = ts, ts
	}
	w.minTS, w.maxValTS = min(w.minTS, ts), max(w.maxValTS, ts)
	w.fresh++
	if err := g.Windows.Append(w.id, v); err != nil {
		return g.wrap(err)
	}
	c := g.ctx(w, now)
	g.Trigger.OnElement(&w.state, c)
	if g.Trigger.ShouldFire(&w.state, c) {
		if err := g.fire(w, c); err != nil {
			return err
		}
	}
	return g.save(w)
}

// saveIfNew keeps a window a merge just made, even when it is closed.
func (g *TriggeredGroupByKey) saveIfNew(w *trigWindow) error {
	if !w.isNew || !g.Merging {
		return nil
	}
	return g.save(w)
}

func (g *TriggeredGroupByKey) drop(why DropReason, win, k, v []byte, wv wire.WindowedValue) error {
	return reportDrop(g.Name, g.Late, Dropped{Reason: why, Window: win, Timestamp: wv.Timestamp, Pane: wv.Pane,
		Key: k, Value: v, Watermark: g.wm, AllowedLateness: g.AllowedLateness})
}

// fire runs the trigger's firing and emits the pane it makes.
//
// A finished trigger closes its window, as Beam's model says, except in the
// global window: that window never expires while the input runs, so closing
// it would drop every later element of the key for the life of the job. There
// the trigger starts over instead, and the pane is not the last.
func (g *TriggeredGroupByKey) fire(w *trigWindow, c triggers.Context) error {
	g.Trigger.OnFire(&w.state, c)
	finished := w.state.Finished()
	if finished && w.id.End == mtime.EndOfGlobalWindowTime {
		w.state = g.Trigger.NewState()
		return g.emitPane(w, false)
	}
	w.closed = finished
	return g.emitPane(w, finished)
}

// emitPane emits the window's pane if new values arrived since the last
// one, or, with none, if it is the final pane and FinalAlways is set or the
// on-time pane and OnTimeAlways is set (then it holds what accumulated, or
// nothing when discarding); it keeps or drops the values as the
// accumulation mode says.
func (g *TriggeredGroupByKey) emitPane(w *trigWindow, final bool) error {
	fresh := w.fresh
	timing := w.panes.Timing(w.id.End, g.wm, g.outWM)
	if fresh > 0 || final && g.FinalAlways || timing == triggers.OnTime && g.OnTimeAlways {
		pane := w.panes.Next(w.id.End, g.wm, g.outWM, final)
		if fresh == 0 {
			// The timestamps kept are the last pane's: this one has no
			// value of its own, so it goes out at the window's end.
			w.minTS, w.maxValTS = w.id.End, w.id.End
		}
		if err := g.encode(w, pane); err != nil {
			return err
		}
	}
	w.fresh = 0
	if (fresh > 0 || final) && (!g.Accumulating || final) {
		return g.wrap(g.Windows.ClearValues(w.id))
	}
	return nil
}

// evaluate asks an open window's trigger whether to fire, or, when expire
// is set and the watermark has passed the window's expiry, emits its final
// pane and forgets it (Beam's garbage collection: the final pane holds what
// waits, without asking the trigger).
func (g *TriggeredGroupByKey) evaluate(id state.WindowID, now mtime.Time, expire bool) error {
	w, err := g.load(id)
	if err != nil || w == nil {
		return err
	}
	if expire && g.expiry(w.id.End) < g.wm {
		if !w.closed {
			if err := g.emitPane(w, true); err != nil {
				return err
			}
		}
		return g.forget(w.id)
	}
	if w.closed {
		return nil
	}
	c := g.ctx(w, now)
	if !g.Trigger.ShouldFire(&w.state, c) {
		return nil
	}
	if err := g.fire(w, c); err != nil {
		return err
	}
	return g.save(w)
}

// flush commits the store's writes and emits the panes waiting.
func (g *TriggeredGroupByKey) flush(ctx context.Context) error {
	if err := g.Windows.Flush(); err != nil {
		return g.wrap(err)
	}
	if len(g.out) == 0 {
		return nil
	}
	out := g.out
	g.out = nil
	return g.Out.Emit(ctx, 0, out)
}

// Watermark implements Operator.
func (g *TriggeredGroupByKey) Watermark(ctx context.Context, _ int, wm mtime.Time) error {
	if err := g.init(); err != nil {
		return err
	}
	ids, err := g.reached(g.wm, wm)
	if err != nil {
		return err
	}
	g.wm = wm
	now := g.now()
	for _, id := range ids {
		if err := g.evaluate(id, now, true); err != nil {
			return err
		}
	}
	if err := g.fireDue(now); err != nil {
		return err
	}
	if err := g.flush(ctx); err != nil {
		return err
	}
	g.outWM = wm
	return g.Out.Watermark(ctx, wm)
}

// reached lists the windows a watermark moving from old to wm concerns:
// those whose end it passes (their triggers may fire) and those whose
// expiry it passes, in window order. Windows the watermark had already
// passed when they opened were asked when their elements arrived.
func (g *TriggeredGroupByKey) reached(old, wm mtime.Time) ([]state.WindowID, error) {
	if wm <= old {
		return nil, nil
	}
	var ids []state.WindowID
	collect := func(id state.WindowID) error {
		ids = append(ids, ownID(id))
		return nil
	}
	if err := g.Windows.Ending(old, wm, collect); err != nil {
		return nil, g.wrap(err)
	}
	lo, hi := g.beforeLateness(old), g.beforeLateness(wm)
	if hi > old {
		hi = old // the rest were collected above
	}
	if err := g.Windows.Ending(lo, hi, collect); err != nil {
		return nil, g.wrap(err)
	}
	sortIDs(ids)
	return ids, nil
}

// beforeLateness is t minus the allowed lateness: a window whose last
// instant is before it has expired once the watermark reaches t.
func (g *TriggeredGroupByKey) beforeLateness(t mtime.Time) mtime.Time {
	if g.AllowedLateness >= t-mtime.MinTimestamp {
		return mtime.MinTimestamp
	}
	return t - g.AllowedLateness
}

// sortIDs orders windows by their last instant, then key, then window.
func sortIDs(ids []state.WindowID) {
	slices.SortFunc(ids, func(a, b state.WindowID) int {
		switch {
		case a.End != b.End:
			return cmpTime(a.End, b.End)
		case !bytes.Equal(a.Key, b.Key):
			return bytes.Compare(a.Key, b.Key)
		}
		return bytes.Compare(a.Window, b.Window)
	})
}

func cmpTime(a, b mtime.Time) int {
	if a < b {
		return -1
	}
	return 1
}

// encode appends to the output KV<key, iterable<value>> in the window with
// the pane's info, stamped as the timestamp combiner says over the pane's
// new values. Values stream from the store into one buffer.
func (g *TriggeredGroupByKey) encode(w *trigWindow, pane triggers.Pane) error {
	ts := outputTimestamp(g.OutputTime, w.id.End, w.minTS, w.maxValTS)
	val := append(g.val[:0], w.id.Key...)
	at := len(val)
	val = append(val, 0, 0, 0, 0)
	var n uint32
	err := g.Windows.Values(w.id, func(v []byte) error {
		val = append(val, v...)
		n++
		return nil
	})
	if err != nil {
		return g.wrap(err)
	}
	binary.BigEndian.PutUint32(val[at:], n)
	g.val = val
	g.out = append(g.out, wire.AppendWindowedValue(make([]byte, 0, len(val)+len(w.id.Window)+24),
		ts, w.id.Window, triggers.AppendPane(nil, pane), val))
	return nil
}

// Barrier implements Operator: commit the pending batch, so the store's
// snapshot at the barrier holds everything before it.
func (g *TriggeredGroupByKey) Barrier(context.Context, BarrierID) error { return g.Windows.Flush() }

// Finish implements Operator: every input ended, so the watermark reached
// the end of time and every window has expired.
func (g *TriggeredGroupByKey) Finish(context.Context) error { return nil }
