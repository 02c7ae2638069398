package executor

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/wire"
)

// GroupByKey groups KV elements by key and window and emits each group when
// the input watermark passes the end of its window. Groups live in memory
// for now; the Pebble store replaces this map (issue 3).
type GroupByKey struct {
	Name       string
	In         *wire.Codec
	Key        wire.Measure
	OutputTime pipepb.OutputTime_Enum
	Out        *Output

	groups  map[string]*group
	windows [][]byte // scratch for decoding
}

type group struct {
	window, key []byte
	end         mtime.Time // window's max timestamp
	values      [][]byte
	minTS       mtime.Time
	maxTS       mtime.Time
}

// Process implements Operator.
func (g *GroupByKey) Process(_ context.Context, _ int, elems [][]byte) error {
	if g.groups == nil {
		g.groups = map[string]*group{}
	}
	for _, e := range elems {
		wv, _, err := g.In.Decode(e, g.windows)
		if err != nil {
			return fmt.Errorf("group by key %s: decode element: %w", g.Name, err)
		}
		g.windows = wv.Windows
		k, v, err := wire.SplitKV(g.Key, wv.Value)
		if err != nil {
			return fmt.Errorf("group by key %s: %w", g.Name, err)
		}
		for _, w := range wv.Windows {
			id := string(w) + "\x00" + string(k)
			gr, ok := g.groups[id]
			if !ok {
				gr = &group{window: w, key: k, end: wire.WindowMaxTimestamp(w),
					minTS: wv.Timestamp, maxTS: wv.Timestamp}
				g.groups[id] = gr
			}
			gr.values = append(gr.values, v)
			gr.minTS = min(gr.minTS, wv.Timestamp)
			gr.maxTS = max(gr.maxTS, wv.Timestamp)
		}
	}
	return nil
}

// Watermark implements Operator: fire every group whose window has closed,
// in window order, then pass the watermark on.
func (g *GroupByKey) Watermark(ctx context.Context, _ int, wm mtime.Time) error {
	var ready []*group
	for id, gr := range g.groups {
		if gr.end <= wm {
			ready = append(ready, gr)
			delete(g.groups, id)
		}
	}
	sort.Slice(ready, func(i, j int) bool { return ready[i].end < ready[j].end })
	const batch = 256
	out := make([][]byte, 0, min(len(ready), batch))
	for _, gr := range ready {
		out = append(out, g.encode(gr))
		if len(out) == batch {
			if err := g.Out.Emit(ctx, 0, out); err != nil {
				return err
			}
			out = make([][]byte, 0, batch)
		}
	}
	if err := g.Out.Emit(ctx, 0, out); err != nil {
		return err
	}
	return g.Out.Watermark(ctx, wm)
}

// encode writes KV<key, iterable<value>> in the group's window.
func (g *GroupByKey) encode(gr *group) []byte {
	ts := gr.end
	switch g.OutputTime {
	case pipepb.OutputTime_EARLIEST_IN_PANE:
		ts = gr.minTS
	case pipepb.OutputTime_LATEST_IN_PANE:
		ts = gr.maxTS
	}
	n := len(gr.key) + 4
	for _, v := range gr.values {
		n += len(v)
	}
	val := make([]byte, 0, n)
	val = append(val, gr.key...)
	val = binary.BigEndian.AppendUint32(val, uint32(len(gr.values)))
	for _, v := range gr.values {
		val = append(val, v...)
	}
	return wire.AppendWindowedValue(make([]byte, 0, n+32), ts, gr.window, []byte{wire.PaneOnTimeOnly}, val)
}

// Barrier implements Operator. Snapshots are not stored yet.
func (g *GroupByKey) Barrier(context.Context, BarrierID) error { return nil }

// Finish implements Operator: the watermark reached the end of time before
// the inputs ended, so nothing is left to fire.
func (g *GroupByKey) Finish(ctx context.Context) error {
	if len(g.groups) > 0 {
		return g.Watermark(ctx, 0, mtime.MaxTimestamp)
	}
	return nil
}
