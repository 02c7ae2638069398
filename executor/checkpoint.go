package executor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// Checkpointer takes part in checkpoints on behalf of a graph's subtasks;
// the runner implements it over its store and checkpoint storage. Subtask
// goroutines call it concurrently.
type Checkpointer interface {
	// SwitchAt says when a subtask still aligning barrier id stops waiting
	// and goes unaligned; ok false means never.
	SwitchAt(id BarrierID) (at time.Time, ok bool)
	// Snapshot takes the synchronous part of a subtask's snapshot. The
	// subtask calls it after Operator.Barrier returned and before the
	// barrier goes downstream; an error fails the job.
	Snapshot(node, subtask int, id BarrierID) error
	// Done reports that a subtask has done its part of checkpoint id: the
	// snapshot is taken and, unaligned, the data the barrier overtook is
	// known. The asynchronous part of the snapshot starts here.
	Done(r BarrierRecord)
	// Finished reports a subtask that ended: it takes part in no later
	// checkpoint, and its part of a pending one is empty.
	Finished(node, subtask int)
}

// BarrierRecord is what a subtask reports of one checkpoint.
type BarrierRecord struct {
	Node, Subtask int
	ID            BarrierID
	// Arrival is when the first barrier reached the subtask (for a source,
	// when it injected it).
	Arrival time.Time
	// Alignment is from arrival to the snapshot; Sync is the snapshot's
	// synchronous part (Operator.Barrier and Checkpointer.Snapshot).
	Alignment, Sync time.Duration
	// Unaligned says the barrier went downstream before every channel had
	// delivered it; InFlight then holds the data it overtook (see
	// DecodeInFlight), which the snapshot does not include.
	Unaligned bool
	InFlight  []byte
	// Watermarks are the subtask's input watermark per port at the
	// snapshot (none for sources), so a restored subtask neither fires
	// windows early nor fires them again.
	Watermarks []mtime.Time
	// Channels are what the snapshot recorded of each input channel, in
	// channel order (none for sources and for subtasks whose inputs had
	// ended): the watermarks a restored subtask starts each channel at,
	// rather than every channel of a port at the port's minimum.
	Channels []ChannelMark
	// State is what the operator or source keeps outside the store (see
	// StateSnapshotter and Injector.OnSnapshot), opaque to the executor.
	State []byte
}

// ChannelMark is what a snapshot records of one input channel: the
// watermark, status and synthetic processing time the subtask had
// processed (MaxTimestamp for a channel that had ended), and the newest of each
// that an unaligned barrier overtook: sent before the barrier, processed
// after the snapshot, so a restore hands them over after the in-flight
// data. MinTimestamp where there is none.
type ChannelMark struct {
	Watermark, ProcessingTime                 mtime.Time
	InFlightWatermark, InFlightProcessingTime mtime.Time
	// Idle says the channel's producer had said it was idle (KindStatus);
	// InFlightIdle and InFlightActive, that the newest status the
	// unaligned barrier overtook was idle or active (neither: none).
	Idle                         bool
	InFlightIdle, InFlightActive bool
}

// StateSnapshotter is implemented by operators that keep state outside the
// store which a checkpoint must hold. The gate calls it in the synchronous
// part of the snapshot, after Operator.Barrier.
type StateSnapshotter interface {
	SnapshotState(id BarrierID) ([]byte, error)
}

// Detacher is implemented by operators whose input elements may name what
// lives no longer than the process: a group-by-key's held group, which a
// consumer reads by token (heldinput.go). Detach returns elems as a
// checkpoint must keep them to replay after a restore, each such group
// read and inlined; the rest come back as they are. The gate passes the
// in-flight data an unaligned barrier overtakes through it. With release,
// the result replaces elems for good (twophase.StableInput keeps it in
// the store), so their claims on the groups are given up.
type Detacher interface {
	Detach(port int, elems [][]byte, release bool) ([][]byte, error)
}

// inFlight records the batches an unaligned barrier overtook:
//
//	batch: uvarint channel | uvarint port | uvarint count | count × (uvarint len | bytes)
//
// It copies the bytes at once: the operator may keep or reuse what it is
// handed.
type inFlight struct{ buf []byte }

func (f *inFlight) add(ch, port int, elems [][]byte) {
	f.buf = binary.AppendUvarint(f.buf, uint64(ch))
	f.buf = binary.AppendUvarint(f.buf, uint64(port))
	f.buf = binary.AppendUvarint(f.buf, uint64(len(elems)))
	for _, e := range elems {
		f.buf = binary.AppendUvarint(f.buf, uint64(len(e)))
		f.buf = append(f.buf, e...)
	}
}

// overtook records message m of channel ch, which the pending unaligned
// barrier overtook, as in flight: its data, or its watermark or
// processing time.
func (g *gate) overtook(ch int, m Message) error {
	c := &g.channels[ch]
	switch m.Kind {
	case KindData:
		return g.record(ch, m.Elems)
	case KindWatermark:
		c.flightWM = max(c.flightWM, m.Watermark)
	case KindProcessingTime:
		c.flightPT = max(c.flightPT, m.Watermark)
	case KindStatus:
		c.flightIdle, c.flightActive = m.Status == watermarkmgr.StatusIdle, m.Status != watermarkmgr.StatusIdle
	}
	return nil
}

// record adds data of channel ch to the in-flight data, as the operator
// says it must be kept (Detacher).
func (g *gate) record(ch int, elems [][]byte) error {
	port := g.channels[ch].port
	if d, ok := g.op.(Detacher); ok {
		var err error
		if elems, err = d.Detach(port, elems, false); err != nil {
			return fmt.Errorf("executor: in-flight data of channel %d: %w", ch, err)
		}
	}
	g.flight.add(ch, port, elems)
	return nil
}

// channelMarks appends what the snapshot records of each channel now to
// b; the in-flight parts come later (maybeAligned).
func (g *gate) channelMarks(b []ChannelMark) []ChannelMark {
	for i := range g.channels {
		c := &g.channels[i]
		wm, live := g.ports[c.port].InputWatermark(c.in)
		if !live {
			wm = mtime.MaxTimestamp
		}
		b = append(b, ChannelMark{Watermark: wm, ProcessingTime: c.pt, Idle: live && g.ports[c.port].IsIdle(c.in)})
	}
	return b
}

// DecodeInFlight calls fn with each batch recorded in b, in the order they
// arrived: the input channel, its port and the elements.
func DecodeInFlight(b []byte, fn func(ch, port int, elems [][]byte) error) error {
	var hdr [3]uint64
	for len(b) > 0 {
		for i := range hdr {
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return errors.New("executor: in-flight data: bad batch header")
			}
			hdr[i], b = v, b[n:]
		}
		if hdr[2] > uint64(len(b)) {
			return fmt.Errorf("executor: in-flight data: %d elements in %d bytes", hdr[2], len(b))
		}
		elems := make([][]byte, 0, hdr[2])
		for range hdr[2] {
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errors.New("executor: in-flight data: bad element length")
			}
			elems = append(elems, b[n:n+int(l)])
			b = b[n+int(l):]
		}
		if err := fn(int(hdr[0]), int(hdr[1]), elems); err != nil {
			return err
		}
	}
	return nil
}

type injectorKey struct{}

// PollBarriers lets an operator that keeps running after its inputs ended
// (an SDK stage resuming an unbounded SDF in Finish) take part in
// checkpoints: with no input left to bring barriers, they are injected
// into it as into a source, and it calls PollBarriers between units of
// work with the context Finish got. Each barrier waiting is snapshotted
// (Operator.Barrier first), forwarded and reported. Outside Finish it does
// nothing.
func PollBarriers(ctx context.Context) error {
	inj, _ := ctx.Value(injectorKey{}).(*Injector)
	if inj == nil {
		return nil
	}
	_, err := inj.Poll()
	return err
}
