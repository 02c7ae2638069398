package executor

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/triggers"
	"github.com/weir-runner/weir/wire"
)

// GroupByKey groups KV elements by key and window and emits each group when
// the input watermark passes the end of its window. Values wait in the
// store's shuffle buffer, not in Go memory. With merging windows (sessions),
// a key's windows are merged as Beam's sessions merge before they fire;
// those still wait in memory (a later step moves them to the store too).
//
// An element whose window has expired when it arrives (the input watermark
// has passed the window's end plus the allowed lateness) is dropped, as Beam
// requires, and handed to Late; for merging windows this is decided on the
// element's own window, before merging, as Beam does.
type GroupByKey struct {
	Name            string
	In              *wire.Codec
	Key             wire.Measure
	OutputTime      pipepb.OutputTime_Enum
	Merging         bool
	AllowedLateness mtime.Time // milliseconds
	Buf             *state.Shuffle
	Out             *Output
	// Late, if set, records arrival delays and every dropped element.
	Late *TransformLate
	// Now reads the wall clock; nil means time.Now. Unused once a TestStream
	// drives processing time.
	Now func() time.Time

	// Dropped counts the elements dropped as late.
	Dropped int64

	sessions  map[string][]*group // merging: key → its windows, merged lazily
	windows   [][]byte            // scratch for decoding
	wm        mtime.Time          // input watermark, once wmSeen
	wmSeen    bool
	synthetic bool       // processing time comes from a TestStream
	pt        mtime.Time // synthetic processing time
}

// expired reports whether a window whose last instant is maxTS has expired.
func (g *GroupByKey) expired(maxTS mtime.Time) bool {
	if !g.wmSeen || maxTS >= mtime.MaxTimestamp-g.AllowedLateness {
		return false
	}
	return maxTS+g.AllowedLateness < g.wm
}

func (g *GroupByKey) now() mtime.Time {
	switch {
	case g.synthetic:
		return g.pt
	case g.Now != nil:
		return mtime.FromTime(g.Now())
	}
	return mtime.FromTime(time.Now())
}

type group struct {
	window, key []byte
	start       mtime.Time // merging windows only
	end         mtime.Time // window's max timestamp
	values      [][]byte
	minTS       mtime.Time
	maxTS       mtime.Time
}

// Process implements Operator.
func (g *GroupByKey) Process(_ context.Context, _ int, elems [][]byte) error {
	dropped := g.Dropped
	var now mtime.Time
	if g.Late != nil {
		now = g.now()
	}
	for _, e := range elems {
		wv, k, v, err := decodeKV(g.Name, g.In, g.Key, e, g.windows)
		if err != nil {
			return err
		}
		g.windows = wv.Windows
		g.Late.arrival(wv.Timestamp, now)
		for _, w := range wv.Windows {
			if g.expired(wire.WindowMaxTimestamp(w)) {
				if err := g.drop(w, k, v, wv); err != nil {
					return err
				}
				continue
			}
			if g.Merging {
				if err := g.addSession(w, k, v, wv.Timestamp); err != nil {
					return err
				}
				continue
			}
			if err := g.Buf.Add(KeyGroup(k), wire.WindowMaxTimestamp(w), w, k, wv.Timestamp, v); err != nil {
				return fmt.Errorf("group by key %s: %w", g.Name, err)
			}
		}
	}
	// The buffer is not flushed here: it commits itself every few
	// megabytes, sorted (state.Shuffle), and Fire and Barrier flush it
	// before they read or snapshot. Committing each small input batch
	// would insert its keys into the memtable one search at a time.
	if g.Late != nil && g.Dropped > dropped {
		if err := g.Late.Flush(); err != nil {
			return fmt.Errorf("group by key %s: %w", g.Name, err)
		}
	}
	return nil
}

func (g *GroupByKey) drop(win, k, v []byte, wv wire.WindowedValue) error {
	g.Dropped++
	return reportDrop(g.Name, g.Late, Dropped{Reason: DropLate, Window: win, Timestamp: wv.Timestamp, Pane: wv.Pane,
		Key: k, Value: v, Watermark: g.wm, AllowedLateness: g.AllowedLateness})
}

// decodeKV splits a group-by-key input element into its header, key and
// value; windows is scratch space for the decoded windows.
func decodeKV(name string, in *wire.Codec, key wire.Measure, e []byte, windows [][]byte) (wire.WindowedValue, []byte, []byte, error) {
	wv, _, err := in.Decode(e, windows)
	if err != nil {
		return wv, nil, nil, fmt.Errorf("group by key %s: decode element: %w", name, err)
	}
	k, v, err := wire.SplitKV(key, wv.Value)
	if err != nil {
		return wv, nil, nil, fmt.Errorf("group by key %s: %w", name, err)
	}
	return wv, k, v, nil
}

// reportDrop hands a dropped element to the job's late-data record, if any.
func reportDrop(name string, late *TransformLate, d Dropped) error {
	if late == nil {
		return nil
	}
	if err := late.Drop(d); err != nil {
		return fmt.Errorf("group by key %s: %w", name, err)
	}
	return nil
}

// ProcessingTime implements ProcessingTimer: a TestStream moved the job's
// processing time, which arrival delays are measured against.
func (g *GroupByKey) ProcessingTime(ctx context.Context, t mtime.Time) error {
	g.synthetic, g.pt = true, t
	return g.Out.ProcessingTime(ctx, t)
}

// addSession records a value in its own proto-window; merging waits for the
// watermark, when the windows that can fire are known.
func (g *GroupByKey) addSession(w, k, v []byte, ts mtime.Time) error {
	start, end, err := wire.DecodeIntervalWindow(w)
	if err != nil {
		return fmt.Errorf("group by key %s: merging windows need interval windows: %w", g.Name, err)
	}
	if g.sessions == nil {
		g.sessions = map[string][]*group{}
	}
	g.sessions[string(k)] = append(g.sessions[string(k)], &group{
		window: wire.AppendIntervalWindow(nil, start, end), key: k, end: end - 1,
		values: [][]byte{v}, minTS: ts, maxTS: ts, start: start})
	return nil
}

// readySessions merges each key's windows and takes out those whose merged
// window wm has passed.
func (g *GroupByKey) readySessions(wm mtime.Time) []*group {
	var ready []*group
	for k, gs := range g.sessions {
		ivs := make([]triggers.Interval, len(gs))
		for i, gr := range gs {
			ivs[i] = triggers.Interval{Start: gr.start, End: gr.end + 1}
		}
		var keep []*group
		for _, m := range triggers.MergeSessions(ivs) {
			gr := gs[m.Members[0]]
			if len(m.Members) > 1 {
				gr = &group{key: gs[m.Members[0]].key, start: m.Window.Start, end: m.Window.MaxTimestamp(),
					window: wire.AppendIntervalWindow(nil, m.Window.Start, m.Window.End),
					minTS:  mtime.MaxTimestamp, maxTS: mtime.MinTimestamp}
				for _, i := range m.Members {
					gr.values = append(gr.values, gs[i].values...)
					gr.minTS = min(gr.minTS, gs[i].minTS)
					gr.maxTS = max(gr.maxTS, gs[i].maxTS)
				}
			}
			if gr.end < wm { // as Shuffle.Fire: past the window's last instant
				ready = append(ready, gr)
			} else {
				keep = append(keep, gr)
			}
		}
		if len(keep) == 0 {
			delete(g.sessions, k)
		} else {
			g.sessions[k] = keep
		}
	}
	return ready
}

// Watermark implements Operator: fire every group whose window has closed,
// then pass the watermark on.
func (g *GroupByKey) Watermark(ctx context.Context, _ int, wm mtime.Time) error {
	g.wm, g.wmSeen = wm, true
	const batch = 256
	out := make([][]byte, 0, batch)
	flush := func() error {
		err := g.Out.Emit(ctx, 0, out)
		out = make([][]byte, 0, batch)
		return err
	}
	err := g.Buf.Fire(wm, func(gr *state.Group) error {
		out = append(out, g.encodeFired(gr))
		if len(out) == batch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("group by key %s: %w", g.Name, err)
	}
	ready := g.readySessions(wm)
	sort.Slice(ready, func(i, j int) bool { return ready[i].end < ready[j].end })
	for _, gr := range ready {
		out = append(out, g.encode(gr.window, gr.key, gr.values, gr.end, gr.minTS, gr.maxTS))
		if len(out) == batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return g.Out.Watermark(ctx, wm)
}

// encode writes KV<key, iterable<value>> in the group's window, stamped as
// the timestamp combiner says.
func (g *GroupByKey) encode(window, key []byte, values [][]byte, end, minTS, maxTS mtime.Time) []byte {
	ts := g.timestamp(end, minTS, maxTS)
	n := len(key) + 4
	for _, v := range values {
		n += len(v)
	}
	val := make([]byte, 0, n)
	val = append(val, key...)
	val = binary.BigEndian.AppendUint32(val, uint32(len(values)))
	for _, v := range values {
		val = append(val, v...)
	}
	return wire.AppendWindowedValue(make([]byte, 0, n+32), ts, window, []byte{wire.PaneOnTimeOnly}, val)
}

// timestamp is a group's output timestamp, as the timestamp combiner says.
func (g *GroupByKey) timestamp(end, minTS, maxTS mtime.Time) mtime.Time {
	return outputTimestamp(g.OutputTime, end, minTS, maxTS)
}

// outputTimestamp applies a timestamp combiner to a pane whose values lie
// between minTS and maxTS, in a window whose last instant is end.
func outputTimestamp(mode pipepb.OutputTime_Enum, end, minTS, maxTS mtime.Time) mtime.Time {
	switch mode {
	case pipepb.OutputTime_EARLIEST_IN_PANE:
		return minTS
	case pipepb.OutputTime_LATEST_IN_PANE:
		return maxTS
	}
	return end
}

// Barrier implements Operator: commit the buffered batch, so the store's
// snapshot at the barrier holds everything before it.
func (g *GroupByKey) Barrier(context.Context, BarrierID) error { return g.Buf.Flush() }

// Finish implements Operator: the watermark reached the end of time before
// the inputs ended, so nothing is left to fire.
func (g *GroupByKey) Finish(context.Context) error { return nil }
