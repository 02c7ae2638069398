package kafka

import (
	stdcmp "cmp"
	"slices"
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
	// LastTimestamp is the broker timestamp of the last record read;
	// while Lag > 0, now minus it bounds how far behind the reader is in
	// time (the next record to read is no older).
	LastTimestamp time.Time
	// Read is how many records of the partition the reader delivered.
	Read   int64
	Paused bool
	Idle   bool
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
	// Idle says the reader tells its consumers it is idle: every partition
	// it owns idle, or none owned.
	Idle bool
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
		Partitions: make([]PartitionStats, len(r.parts)), Idle: r.splits.Status() == watermarkmgr.StatusIdle}
	low, high := mtime.MaxTimestamp, mtime.MinTimestamp
	for i, p := range r.parts {
		st := r.splits.State(watermarkmgr.SplitID(i))
		lag := int64(-1)
		if p.high >= 0 {
			lag = max(p.high-p.next, 0)
		}
		s.Partitions[i] = PartitionStats{Topic: p.topic, Partition: p.id, Watermark: st.Watermark,
			Next: p.next, Lag: lag, LastTimestamp: p.last, Read: p.read, Paused: r.paused[i] && !st.Ended, Idle: st.Idle}
		// A partition read to its stop is not fetched any more, but not
		// paused by alignment either.
		if r.paused[i] && !st.Ended {
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

// SourceStats is one reader's statistics and where it runs.
type SourceStats struct {
	Transform string // the source transform's ID
	Subtask   int    // the reader's place among its transform's readers
	Stats
}

// Sources returns the statistics of every reader, by transform ID, then
// subtask.
func (m *Metrics) Sources() []SourceStats {
	m.mu.Lock()
	var out []SourceStats
	for t, rs := range m.readers {
		for _, r := range rs {
			out = append(out, SourceStats{Transform: t, Subtask: r.opts.Assign.Index, Stats: r.Stats()})
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b SourceStats) int {
		return stdcmp.Or(stdcmp.Compare(a.Transform, b.Transform), stdcmp.Compare(a.Subtask, b.Subtask))
	})
	return out
}

// Alignments returns each alignment group's last announcement, by name;
// nil without groups.
func (m *Metrics) Alignments() map[string]watermarkmgr.Announcement {
	if m.groups == nil {
		return nil
	}
	return m.groups.Announcements()
}
