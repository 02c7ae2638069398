package kafka

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// Position is where a reader stands: the next offset to read of every
// partition, how many records it has delivered (a bounded read by
// MaxRecords counts on from there), and its watermarks. A checkpoint
// records it through the source's Injector.OnSnapshot, taken between
// emissions, so every record before the offsets is downstream of the
// barrier; a restored job starts the reader there (ReaderOptions.Resume).
// Offsets are never committed to the broker for this: the checkpoint is
// the source of truth.
type Position struct {
	// Next maps topic → partition → the next offset to read.
	Next map[string]map[int32]int64 `json:"next"`
	// Read counts the records this reader delivered; Total, for a bounded
	// read, those its subtasks delivered in all when the position was
	// taken (Budget).
	Read  int64 `json:"read,omitempty"`
	Total int64 `json:"total,omitempty"`
	// Marks maps topic → partition → its watermark state: the largest
	// event time delivered, idleness and the activity clock. Without them
	// a restored reader starts every partition at -inf and active, so its
	// watermark stands still until the idle ones time out again.
	Marks map[string]map[int32]watermarkmgr.SplitMark `json:"marks,omitempty"`
	// Watermark is the output watermark the source last emitted: the
	// restored reader's never goes below it, though the minimum over its
	// restored partitions may (one back from idleness, behind).
	Watermark *mtime.Time `json:"watermark,omitempty"`
	// Stop maps topic → partition → the offset it ends at, for a read
	// with kafkaio.StopLatest: a restored read ends where the first run
	// would have, not at the ends when it is restored.
	Stop map[string]map[int32]int64 `json:"stop,omitempty"`
}

// Position returns the reader's position now.
func (r *Reader) Position() Position {
	wm := r.splits.Emitted()
	pos := Position{Next: map[string]map[int32]int64{}, Read: r.read,
		Marks: map[string]map[int32]watermarkmgr.SplitMark{}, Watermark: &wm}
	if r.budget != nil {
		pos.Total = r.budget.count()
	}
	for i, p := range r.parts {
		if pos.Next[p.topic] == nil {
			pos.Next[p.topic] = map[int32]int64{}
			pos.Marks[p.topic] = map[int32]watermarkmgr.SplitMark{}
		}
		pos.Next[p.topic][p.id] = p.next
		pos.Marks[p.topic][p.id] = r.splits.Mark(watermarkmgr.SplitID(i))
		if p.stop >= 0 {
			if pos.Stop == nil {
				pos.Stop = map[string]map[int32]int64{}
			}
			if pos.Stop[p.topic] == nil {
				pos.Stop[p.topic] = map[int32]int64{}
			}
			pos.Stop[p.topic][p.id] = p.stop
		}
	}
	return pos
}

// resume moves the partitions a restored position lists to its offsets.
// A position that lists a partition another subtask of the read owns now
// is refused: its offset would be lost there and read from the start
// here.
func (r *Reader) resume(pos *Position) error {
	if pos == nil {
		return nil
	}
	a := r.opts.Assign
	for topic, parts := range pos.Next {
		for p := range parts {
			if !a.Owns(topic, p) {
				return fmt.Errorf("kafka source %s: the checkpoint's position of subtask %d holds topic %q partition %d, which subtask %d of %d reads now: restore the read at the parallelism it was checkpointed with",
					r.name, a.Index, topic, p, Owner(topic, p, a.Of), a.Of)
			}
		}
	}
	for i := range r.parts {
		p := &r.parts[i]
		if o, ok := pos.Next[p.topic][p.id]; ok {
			p.start, p.next = o, o
		}
	}
	r.read = pos.Read
	return nil
}

// resumeWatermarks puts the partitions a restored position lists back at
// their watermarks and idleness, and the output where it was. Partitions
// added since start at -inf, active, as at a fresh start. A position
// recorded before marks were kept has none: the partitions start over.
func (r *Reader) resumeWatermarks(pos *Position) error {
	if pos == nil {
		return nil
	}
	for i, p := range r.parts {
		m, ok := pos.Marks[p.topic][p.id]
		if !ok {
			continue
		}
		if err := r.splits.Restore(watermarkmgr.SplitID(i), m); err != nil {
			return fmt.Errorf("kafka source %s: topic %q partition %d: restore watermark: %w", r.name, p.topic, p.id, err)
		}
	}
	if pos.Watermark != nil {
		r.splits.RestoreOutput(*pos.Watermark)
	}
	return nil
}
