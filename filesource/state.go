package filesource

import (
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// trackerState is what a checkpoint keeps of a tracker: the files taken
// (by path below the folder, with their event time in ms), the horizon
// behind which files were forgotten, the watermark sent, each split's
// mark, and the counts. Files pending (listed, not yet stable) are not
// kept: the restored watch lists them again and waits for them to be
// stable again, which costs one poll.
type trackerState struct {
	Seen    map[string]int64 `json:"seen"`
	Horizon int64            `json:"horizon"`
	Emitted int64            `json:"emitted"`
	Splits  []splitState     `json:"splits,omitempty"`
	Files   int64            `json:"files"`
	Late    int64            `json:"late,omitempty"`
}

type splitState struct {
	Name string                 `json:"name"`
	Mark watermarkmgr.SplitMark `json:"mark"`
}

// State returns the tracker's part of a snapshot.
func (t *Tracker) State() trackerState {
	st := trackerState{Seen: make(map[string]int64, len(t.seen)), Horizon: int64(t.horizon), Emitted: int64(t.emitted),
		Files: t.stats.Files, Late: t.stats.Late}
	for p, ts := range t.seen {
		st.Seen[p] = int64(ts)
	}
	for i, n := range t.names {
		st.Splits = append(st.Splits, splitState{Name: n, Mark: t.splits.Mark(watermarkmgr.SplitID(i))})
	}
	return st
}

// restoreTracker returns a tracker that goes on from st at processing
// time now. Its first listing cannot tell a file read and forgotten
// (behind the horizon) from one that arrived while the job was down with
// an old time: such files are not read, and each is a NoteAmbiguous.
func restoreTracker(cfg trackerConfig, st trackerState, now time.Time) (*Tracker, error) {
	t := newTracker(cfg, now)
	for _, s := range st.Splits {
		// A checkpoint of a watch split by folder restored into one that
		// is not: one split, at the newest of their times.
		name := s.Name
		if !cfg.splitByFolder {
			name = ""
		}
		id := t.split(name, now)
		if err := t.splits.Restore(id, s.Mark); err != nil {
			return nil, fmt.Errorf("restore split %q: %w", s.Name, err)
		}
	}
	t.splits.RestoreOutput(mtime.Time(st.Emitted))
	t.emitted = mtime.Time(st.Emitted)
	t.horizon = mtime.Time(st.Horizon)
	for p, ts := range st.Seen {
		t.seen[p] = mtime.Time(ts)
	}
	t.stats.Files, t.stats.Late = st.Files, st.Late
	t.restored = true
	return t, nil
}
