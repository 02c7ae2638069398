package filesource

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// File is a file ready to read.
type File struct {
	Path string // below the folder, slash-separated
	Size int64
	Mod  time.Time
	// Time is the file's event time, its elements' timestamp.
	Time mtime.Time
}

// trackerConfig is what a tracker needs of the watch's configuration.
type trackerConfig struct {
	stamp *stamper
	// renamed takes files at first sight; otherwise they must be stable
	// (the same size and modification time at two listings in a row).
	renamed       bool
	splitByFolder bool
	splits        watermarkmgr.SplitsConfig
	retention     time.Duration // 0: remember every file
}

// NoteKind says what a Note reports.
type NoteKind int

// Notes.
const (
	// NoteUnparsed: the file's name gives no time; it is not read.
	NoteUnparsed NoteKind = iota + 1
	// NoteAmbiguous: after a restore, a file behind the horizon that the
	// checkpoint does not name: it was read and forgotten, or arrived
	// while the job was down. It is not read.
	NoteAmbiguous
)

// Note is something a listing found that the job's messages should say.
type Note struct {
	Kind NoteKind
	Path string
	Err  error // NoteUnparsed: why
}

// stat is what the stable rule compares between two listings.
type stat struct {
	size int64
	mod  time.Time
	time mtime.Time
}

// Tracker is the pure core of a folder watch: fed each listing of the
// folder and the processing time, it says which files are ready to read,
// in event-time order, remembers the files read, and keeps the watermark.
// It does no I/O and reads no clock. Not safe for concurrent use.
//
// The caller's loop:
//
//  1. List the folder; Observe(listing, now) returns the files ready.
//  2. For each, in order: read it, and Take it (in lines mode, Take it
//     when its first line goes out: the snapshot's offset covers the
//     rest). Take reports whether the file is late.
//  3. Watermark(now): if it advanced, send it downstream.
//  4. At a barrier, State is the tracker's part of the snapshot;
//     restoreTracker makes a tracker from it.
type Tracker struct {
	cfg trackerConfig
	// seen holds the files taken, with their time; files behind horizon
	// are forgotten (retention).
	seen    map[string]mtime.Time
	horizon mtime.Time
	// pending holds files listed once that are not stable yet; their
	// times hold the watermark back: they are data on the way.
	pending map[string]stat
	// present is the previous listing's files; nil before the first
	// listing. A file behind the horizon that was listed before is a
	// forgotten one, not a new arrival.
	present map[string]bool
	// restored: the first listing after a restore cannot tell forgotten
	// files from arrivals (NoteAmbiguous).
	restored bool
	// unparsed are listed files whose names gave no time, reported once.
	unparsed map[string]bool

	index   map[string]watermarkmgr.SplitID
	names   []string
	splits  *watermarkmgr.Splits
	emitted mtime.Time // the watermark last reported by Watermark

	stats Stats
}

// Stats counts what a tracker saw.
type Stats struct {
	Files     int64 // files taken
	Late      int64 // files taken behind the watermark
	Unparsed  int64 // files not read: no time in their names
	Ambiguous int64 // files not read after a restore (NoteAmbiguous)
	Pending   int   // files waiting to be stable, at the last listing
	Seen      int   // files remembered
}

// newTracker returns a tracker of a fresh start at processing time now.
func newTracker(cfg trackerConfig, now time.Time) *Tracker {
	t := &Tracker{cfg: cfg, seen: map[string]mtime.Time{}, horizon: mtime.MinTimestamp, pending: map[string]stat{},
		unparsed: map[string]bool{}, index: map[string]watermarkmgr.SplitID{}, emitted: mtime.MinTimestamp}
	t.splits = watermarkmgr.NewSplits(0, cfg.splits, now)
	if !cfg.splitByFolder {
		t.split("", now)
	}
	return t
}

// splitOf names the split of a file: its first-level folder with
// splitByFolder ("" for files directly in the folder), else "".
func (t *Tracker) splitOf(p string) string {
	if !t.cfg.splitByFolder {
		return ""
	}
	if first, _, ok := strings.Cut(p, "/"); ok {
		return first
	}
	return ""
}

// split returns the ID of the split named name, adding it (at -inf, so it
// holds the watermark where it is until it catches up) if it is new.
func (t *Tracker) split(name string, now time.Time) watermarkmgr.SplitID {
	if id, ok := t.index[name]; ok {
		return id
	}
	// Splits has a fixed number of splits: make one more and put the
	// others back where they were.
	old := t.splits
	t.splits = watermarkmgr.NewSplits(old.Len()+1, t.cfg.splits, now)
	for i := range old.Len() {
		// Restore fails only for an ended split or one out of range,
		// neither of which a tracker makes.
		_ = t.splits.Restore(watermarkmgr.SplitID(i), old.Mark(watermarkmgr.SplitID(i)))
	}
	t.splits.RestoreOutput(old.Emitted())
	id := watermarkmgr.SplitID(len(t.names))
	t.names = append(t.names, name)
	t.index[name] = id
	return id
}

// Observe takes a listing of the folder at processing time now and
// returns the files ready to read, by event time then path, and what the
// job's messages should say.
func (t *Tracker) Observe(listing []Entry, now time.Time) ([]File, []Note) {
	var ready []File
	var notes []Note
	present := make(map[string]bool, len(listing))
	pending := make(map[string]stat, len(t.pending))
	unparsed := map[string]bool{}
	for _, e := range listing {
		present[e.Path] = true
		if _, ok := t.seen[e.Path]; ok {
			continue
		}
		ts, err := t.cfg.stamp.time(e.Path, e.Mod)
		if err != nil {
			unparsed[e.Path] = true
			if !t.unparsed[e.Path] {
				t.stats.Unparsed++
				notes = append(notes, Note{Kind: NoteUnparsed, Path: e.Path, Err: err})
			}
			continue
		}
		prev, wasPending := t.pending[e.Path]
		if ts < t.horizon && !wasPending {
			switch {
			case t.present == nil && t.restored:
				t.stats.Ambiguous++
				notes = append(notes, Note{Kind: NoteAmbiguous, Path: e.Path})
				continue
			case t.present[e.Path]:
				continue // read before and forgotten: it stayed in the folder
			}
			// Not listed before: a new file, late by more than the
			// retention. It is read, and counted late.
		}
		cur := stat{size: e.Size, mod: e.Mod, time: ts}
		if t.cfg.renamed || wasPending && prev.size == cur.size && prev.mod.Equal(cur.mod) {
			ready = append(ready, File{Path: e.Path, Size: e.Size, Mod: e.Mod, Time: ts})
			t.split(t.splitOf(e.Path), now)
			continue
		}
		pending[e.Path] = cur
		// A file on the way is activity: its folder is not idle.
		_ = t.splits.Pending(t.split(t.splitOf(e.Path), now), now)
	}
	t.present, t.pending, t.unparsed, t.restored = present, pending, unparsed, false
	t.stats.Pending = len(pending)
	slices.SortFunc(ready, func(a, b File) int { return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.Path, b.Path)) })
	return ready, notes
}

// Take records that f is read (or, in lines mode, being read): it is not
// returned again, and its time moves its split's watermark. It reports
// whether f is late: behind the watermark already sent downstream.
func (t *Tracker) Take(f File, now time.Time) (late bool) {
	t.seen[f.Path] = f.Time
	delete(t.pending, f.Path)
	t.stats.Files++
	late = f.Time < t.emitted
	if late {
		t.stats.Late++
	}
	// Record fails only for a split out of range or ended; Observe made
	// f's split and no split ends.
	_, _ = t.splits.Record(t.split(t.splitOf(f.Path), now), f.Time, now)
	return late
}

// Taken returns how many files were taken, restores included.
func (t *Tracker) Taken() int64 { return t.stats.Files }

// Watermark returns the watch's watermark at processing time now, and
// whether it advanced since the last call: the minimum over the splits
// that are not idle of each one's newest time minus the out-of-orderness,
// held back by the files waiting to be stable. Files further behind it
// than the retention are forgotten.
func (t *Tracker) Watermark(now time.Time) (mtime.Time, bool) {
	if _, err := t.splits.Tick(now); err != nil {
		return t.emitted, false
	}
	if t.splits.Len() == 0 {
		return t.emitted, false // no split yet: Splits of none would say +inf
	}
	wm, _ := t.splits.Emit()
	for _, p := range t.pending {
		wm = min(wm, p.time)
	}
	if wm <= t.emitted {
		return t.emitted, false
	}
	t.emitted = wm
	t.forget()
	return wm, true
}

// forget drops the files further behind the watermark than the
// retention.
func (t *Tracker) forget() {
	if t.cfg.retention <= 0 || t.emitted >= mtime.MaxTimestamp {
		return
	}
	h := subSaturating(t.emitted, t.cfg.retention)
	if h <= t.horizon {
		return
	}
	t.horizon = h
	for p, ts := range t.seen {
		if ts < h {
			delete(t.seen, p)
		}
	}
}

// Stats returns the tracker's counts.
func (t *Tracker) Stats() Stats {
	s := t.stats
	s.Seen = len(t.seen)
	return s
}

// Splits returns each split's name and watermark, for the job's view.
func (t *Tracker) Splits() []SplitWatermark {
	out := make([]SplitWatermark, len(t.names))
	for i, n := range t.names {
		st := t.splits.State(watermarkmgr.SplitID(i))
		out[i] = SplitWatermark{Name: n, Watermark: st.Watermark, Idle: st.Idle}
	}
	return out
}

// SplitWatermark is one split's state.
type SplitWatermark struct {
	Name      string
	Watermark mtime.Time
	Idle      bool
}

// subSaturating returns t minus d, stopping at MinTimestamp.
func subSaturating(t mtime.Time, d time.Duration) mtime.Time {
	ms := mtime.Time(d.Milliseconds())
	if t-mtime.MinTimestamp <= ms {
		return mtime.MinTimestamp
	}
	return t - ms
}
