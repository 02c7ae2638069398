package kafka

import (
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// PartitionStats describes one partition of a reader.
type PartitionStats struct {
	Topic     string
	Partition int32
	Watermark mtime.Time
	// Next is the next offset to read; Lag is the high watermark minus
	// Next, or -1 before the first fetch told the high watermark.
	Next, Lag int64
	Paused    bool
	Idle      bool
}

// Stats describes a reader at the end of its last Poll.
type Stats struct {
	Source     string
	Output     mtime.Time // the source's output watermark
	Partitions []PartitionStats
	// Spread is the distance in event time between the fastest and the
	// slowest partition that is neither idle nor ended and has a
	// watermark: it moves first in a backfill or a one-sided replay.
	Spread  time.Duration
	Paused  int   // partitions paused by alignment
	Records int64 // records read
	Late    int64 // records behind the output watermark when read
	Done    bool
}

// Stats returns a copy of the reader's statistics. It is safe to call
// from any goroutine.
func (r *Reader) Stats() Stats {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	s := r.stats
	s.Partitions = append([]PartitionStats(nil), s.Partitions...)
	return s
}

func (r *Reader) updateStats() {
	s := Stats{Source: r.name, Output: r.splits.Output(), Records: r.read, Late: r.late, Done: r.done,
		Partitions: make([]PartitionStats, len(r.parts))}
	low, high := mtime.MaxTimestamp, mtime.MinTimestamp
	for i, p := range r.parts {
		st := r.splits.State(watermarkmgr.SplitID(i))
		lag := int64(-1)
		if p.high >= 0 {
			lag = max(p.high-p.next, 0)
		}
		s.Partitions[i] = PartitionStats{Topic: p.topic, Partition: p.id, Watermark: st.Watermark,
			Next: p.next, Lag: lag, Paused: r.paused[i], Idle: st.Idle}
		if r.paused[i] {
			s.Paused++
		}
		if !st.Idle && !st.Ended && st.Watermark > mtime.MinTimestamp {
			low, high = min(low, st.Watermark), max(high, st.Watermark)
		}
	}
	if low < high {
		s.Spread = time.Duration(high-low) * time.Millisecond
	}
	r.statsMu.Lock()
	r.stats = s
	r.statsMu.Unlock()
}
