package executor

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// SubtaskRestore is what one subtask of a restored job starts from: the
// part of a checkpoint its snapshot wrote. The store's records are not
// here: the runner imports them into the fresh store before the graph
// runs.
type SubtaskRestore struct {
	// Finished says the subtask had ended before the checkpoint was taken,
	// so the checkpoint holds no part of it: everything it produced is
	// downstream. A source that finished does not run again; an operator
	// runs as usual (its inputs end at once).
	Finished bool
	// State is what the operator (StateRestorer) or source
	// (Injector.Restored) recorded outside the store.
	State []byte
	// Watermarks are the input watermark of each port at the snapshot.
	Watermarks []mtime.Time
	// InFlight is the data an unaligned barrier overtook (see
	// DecodeInFlight), re-processed before anything new.
	InFlight []byte
	// Channels, if set, are each input channel's marks (one per
	// channel): they replace Watermarks, and their in-flight watermarks
	// follow the in-flight data.
	Channels []ChannelMark
}

// StateRestorer is the other half of StateSnapshotter: a restored
// subtask's operator gets back what its SnapshotState returned, before its
// first input, watermark or Finish.
type StateRestorer interface {
	RestoreState(state []byte) error
}

// Restored returns what the source recorded through OnSnapshot in the
// checkpoint the job was restored from; nil for a fresh start. A source
// reads it at the start of Run and resumes from there.
func (inj *Injector) Restored() []byte { return inj.restored }

// restoreOf returns what a subtask restores, nil for a fresh start.
func (g *Graph) restoreOf(node, sub int) *SubtaskRestore {
	if g.Restore == nil {
		return nil
	}
	return g.Restore(node, sub)
}

// endedSource is a restored source that had finished: it produces nothing.
type endedSource struct{}

func (endedSource) Run(context.Context, *Output, *Injector) error { return nil }

// restore starts a restored subtask where its snapshot left it, before any
// message: the operator's own state, then its channels at their recorded
// watermarks and processing times (so that it neither fires windows again
// nor earlier than it would have: restored producers that start behind
// are ignored until they catch up, as watermarks never move back), then
// the in-flight data, which was sent before the barrier and so comes
// before anything new, then the watermarks and processing times in flight
// with it (handed over after the data they followed, which is safe: a
// watermark may always come later).
func (g *gate) restore(ctx context.Context, rs *SubtaskRestore) error {
	if rs == nil {
		return nil
	}
	if rs.State != nil {
		sr, ok := g.op.(StateRestorer)
		if !ok {
			return fmt.Errorf("executor: restore: the checkpoint holds state of the operator (%d bytes) but %T cannot restore it", len(rs.State), g.op)
		}
		if err := sr.RestoreState(rs.State); err != nil {
			return fmt.Errorf("executor: restore state: %w", err)
		}
	}
	if len(rs.Channels) > 0 && len(rs.Channels) != len(g.channels) {
		return fmt.Errorf("executor: restore: %d channels recorded, the subtask has %d", len(rs.Channels), len(g.channels))
	}
	if len(rs.Channels) == 0 {
		if err := g.restorePorts(ctx, rs.Watermarks); err != nil {
			return err
		}
	} else if err := g.restoreChannels(ctx, rs.Channels, false); err != nil {
		return err
	}
	err := DecodeInFlight(rs.InFlight, func(ch, port int, elems [][]byte) error {
		if ch < 0 || ch >= len(g.channels) || g.channels[ch].port != port {
			return fmt.Errorf("executor: restore: in-flight data of channel %d port %d, which the subtask does not have", ch, port)
		}
		return g.op.Process(ctx, port, elems)
	})
	if err != nil {
		return err
	}
	if len(rs.Channels) > 0 {
		if err := g.restoreChannels(ctx, rs.Channels, true); err != nil {
			return err
		}
	}
	// The consumers were restored with this subtask's channels as the
	// checkpoint found them, idle or not, and it may start otherwise:
	// tell them, whatever the status is.
	return g.sendStatus(ctx, watermarkmgr.StatusOf(g.ports))
}

// restorePorts starts every channel of each port at the port's recorded
// watermark: what a checkpoint without channel marks (older, or a
// subtask whose inputs had ended) records.
func (g *gate) restorePorts(ctx context.Context, wms []mtime.Time) error {
	if len(wms) > len(g.ports) {
		return fmt.Errorf("executor: restore: %d port watermarks recorded, the subtask has %d ports", len(wms), len(g.ports))
	}
	for p, wm := range wms {
		if wm <= mtime.MinTimestamp {
			continue
		}
		for i := range g.channels {
			if c := &g.channels[i]; c.port == p {
				if err := g.ports[p].Advance(c.in, wm); err != nil {
					return fmt.Errorf("executor: restore watermark of port %d: %w", p, err)
				}
			}
		}
		if err := g.advance(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// restoreChannels moves each channel to its recorded watermark, status
// and processing time, or with inFlight to those that were in flight, and
// hands the operator whatever that advances. The status comes after the
// watermark: a watermark counts an idle channel again, and a producer
// that said idle sent none after it.
func (g *gate) restoreChannels(ctx context.Context, marks []ChannelMark, inFlight bool) error {
	for i, m := range marks {
		c := &g.channels[i]
		wm, pt := m.Watermark, m.ProcessingTime
		idle, active := m.Idle, false
		if inFlight {
			wm, pt = m.InFlightWatermark, m.InFlightProcessingTime
			idle, active = m.InFlightIdle, m.InFlightActive
		}
		if wm > mtime.MinTimestamp {
			if err := g.ports[c.port].Advance(c.in, wm); err != nil {
				return fmt.Errorf("executor: restore watermark of channel %d: %w", i, err)
			}
		}
		var err error
		switch {
		case idle:
			err = g.ports[c.port].Idle(c.in)
		case active:
			err = g.ports[c.port].Active(c.in)
		}
		if err != nil {
			return fmt.Errorf("executor: restore status of channel %d: %w", i, err)
		}
		c.pt = max(c.pt, pt)
	}
	for p := range g.ports {
		if err := g.advance(ctx, p); err != nil {
			return err
		}
	}
	return g.advanceProcTime(ctx)
}
