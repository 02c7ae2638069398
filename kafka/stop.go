package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-runner/weir/watermarkmgr"
)

// Reads that stop (kafkaio.StopLatest).
//
// A backfill reads what a topic holds when it starts. Bounded by a record
// count or a time, its partitions do not end one by one: one whose log has
// run out keeps its watermark until the idle timeout, and with alignment
// the others wait for it, in turn at each staggered log end (the backfill
// benchmark's tail, docs/benchmarks.md). With a stop offset per partition
// the reader knows a partition has ended when it has delivered everything
// before it, and ends it at once: it leaves the watermark minimum and the
// alignment group, as Flink's bounded KafkaSource ends a split.

// listStops sets each partition's stop offset to its end now: the high
// watermark, or under read_committed the last stable offset, so that an
// open transaction does not keep the read waiting.
func (r *Reader) listStops(ctx context.Context, adm *kadm.Client) error {
	list := adm.ListEndOffsets
	if r.cfg.ConsumerConfig["isolation.level"] == "read_committed" {
		list = adm.ListCommittedOffsets
	}
	ends, err := list(ctx, r.cfg.Topics...)
	if err != nil {
		return fmt.Errorf("kafka source %s: listing the end offsets of %v to stop at: %w", r.name, r.cfg.Topics, err)
	}
	for i := range r.parts {
		p := &r.parts[i]
		o, ok := ends.Lookup(p.topic, p.id)
		switch {
		case !ok:
			return fmt.Errorf("kafka source %s: topic %q partition %d: no end offset listed to stop at", r.name, p.topic, p.id)
		case o.Err != nil:
			return fmt.Errorf("kafka source %s: topic %q partition %d: end offset: %w", r.name, p.topic, p.id, o.Err)
		}
		p.stop = o.Offset
	}
	return nil
}

// resumeStops takes the stop offsets a restored position recorded.
func (r *Reader) resumeStops(pos *Position) {
	if pos == nil {
		return
	}
	for i := range r.parts {
		p := &r.parts[i]
		if o, ok := pos.Stop[p.topic][p.id]; ok {
			p.stop = o
		}
	}
}

// endStopped ends every partition that has delivered everything before
// its stop offset: its fetches stop and its split ends, so it leaves the
// watermark minimum and the alignment group. Once every partition has
// ended, the read does (finish).
func (r *Reader) endStopped() error {
	var pause map[string][]int32
	all := true
	for i := range r.parts {
		p := &r.parts[i]
		ended := r.ended(i)
		if !ended && p.stop >= 0 && p.next >= p.stop && len(p.held) == 0 {
			if err := r.splits.End(watermarkmgr.SplitID(i)); err != nil {
				return fmt.Errorf("kafka source %s: topic %q partition %d: %w", r.name, p.topic, p.id, err)
			}
			ended = true
			if !r.paused[i] {
				pause = addTP(pause, p.topic, p.id)
				r.paused[i] = true
			}
		}
		all = all && ended
	}
	if pause != nil {
		r.client.PauseFetchPartitions(pause)
	}
	if all {
		return r.finish()
	}
	return nil
}

// ended reports whether partition i has ended: read to its stop, or the
// whole read finished.
func (r *Reader) ended(i int) bool { return r.splits.State(watermarkmgr.SplitID(i)).Ended }
