package executor

import (
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// encodeFired encodes a group the shuffle fired. A group it held, whose
// values past the first stay in the store, goes out as a state-backed
// iterable: those first values inline, then the token the consumer reads
// the rest by (see HeldInput).
func (g *GroupByKey) encodeFired(gr *state.Group) []byte {
	if gr.Rest == nil {
		return g.encode(gr.Window, gr.Key, gr.Values, gr.End, gr.MinTS, gr.MaxTS)
	}
	n := len(gr.Key) + 4 + 2*10 + len(gr.Rest)
	for _, v := range gr.Values {
		n += len(v)
	}
	val := append(make([]byte, 0, n), gr.Key...)
	val = wire.AppendStateBackedIterable(val, gr.Values, gr.Rest)
	ts := g.timestamp(gr.End, gr.MinTS, gr.MaxTS)
	return wire.AppendWindowedValue(make([]byte, 0, n+32), ts, gr.Window, []byte{wire.PaneOnTimeOnly}, val)
}
