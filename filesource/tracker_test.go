package filesource

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/fileio"
)

// t0 is the tests' start of processing time; file times are set apart
// from it so that event and processing time cannot be confused.
var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// ev is an event time t0 + s seconds - 1 day.
func ev(s int) time.Time { return t0.Add(-24*time.Hour + time.Duration(s)*time.Second) }

func ms(t time.Time) mtime.Time { return mtime.Time(t.UnixMilli()) }

func trackerOf(t *testing.T, cfg fileio.WatchConfig) *Tracker {
	t.Helper()
	cfg.Dir = "/in"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tc, err := newTrackerConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newTracker(tc, t0)
}

// step lists, takes what is ready and returns the paths taken and the
// watermark after.
func step(tr *Tracker, now time.Time, listing ...Entry) (taken []string, wm mtime.Time) {
	ready, _ := tr.Observe(listing, now)
	for _, f := range ready {
		tr.Take(f, now)
		taken = append(taken, f.Path)
	}
	wm, _ = tr.Watermark(now)
	return taken, wm
}

func e(p string, size int64, mod time.Time) Entry { return Entry{Path: p, Size: size, Mod: mod} }

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: taken %q, want %q", what, got, want)
	}
}

func checkWM(t *testing.T, what string, got mtime.Time, want time.Time) {
	t.Helper()
	if got != ms(want) {
		t.Errorf("%s: watermark %v, want %v", what, got.ToTime().UTC(), want)
	}
}

// TestRenamedFilesInTimeOrder: files renamed into place are read at first
// sight, each once, oldest first; the watermark is the newest time minus
// the out-of-orderness.
func TestRenamedFilesInTimeOrder(t *testing.T) {
	tr := trackerOf(t, fileio.WatchConfig{Ready: fileio.ReadyRenamed, MaxOutOfOrdernessMillis: 5000})
	got, wm := step(tr, t0, e("b", 1, ev(20)), e("a", 1, ev(30)), e("c", 1, ev(10)))
	check(t, "first listing", got, []string{"c", "b", "a"})
	checkWM(t, "first listing", wm, ev(25))
	got, wm = step(tr, t0.Add(time.Second), e("b", 1, ev(20)), e("a", 1, ev(30)), e("c", 1, ev(10)), e("d", 1, ev(40)))
	check(t, "second listing", got, []string{"d"})
	checkWM(t, "second listing", wm, ev(35))
	got, _ = step(tr, t0.Add(2*time.Second), e("d", 1, ev(40)))
	check(t, "third listing", got, nil)
}

// TestStableFiles: without the rename convention a file is read once its
// size and modification time held still across two listings; until
// then it holds the watermark back.
func TestStableFiles(t *testing.T) {
	tr := trackerOf(t, fileio.WatchConfig{})
	got, _ := step(tr, t0, e("a", 10, ev(10)))
	check(t, "first sight", got, nil)
	got, wm := step(tr, t0.Add(time.Second), e("a", 10, ev(10)), e("b", 5, ev(20)))
	check(t, "a stable, b new", got, []string{"a"})
	checkWM(t, "b pending", wm, ev(10))
	got, _ = step(tr, t0.Add(2*time.Second), e("a", 10, ev(10)), e("b", 9, ev(21)))
	check(t, "b grew", got, nil)
	got, _ = step(tr, t0.Add(3*time.Second), e("a", 10, ev(10)), e("b", 9, ev(22)))
	check(t, "b touched", got, nil)
	got, wm = step(tr, t0.Add(4*time.Second), e("a", 10, ev(10)), e("b", 9, ev(22)))
	check(t, "b stable", got, []string{"b"})
	checkWM(t, "b read", wm, ev(22))
}

// TestTimeFromName: a Go layout of the whole name, a layout of a regexp's
// group, Unix seconds; a name that gives no time is not read and is
// reported once.
func TestTimeFromName(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     fileio.WatchConfig
		file    string
		want    time.Time
		unknown string // a name that gives no time
	}{
		{"layout", fileio.WatchConfig{NameLayout: "events-2006-01-02T15.json"}, "events-2026-11-30T07.json",
			time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), "events-latest.json"},
		{"regexp", fileio.WatchConfig{NameLayout: "20060102-1504", NameRegexp: `^log\.(?P<ts>\d{8}-\d{4})\.\d+\.gz$`}, "log.20261130-0715.3.gz",
			time.Date(2026, 11, 30, 7, 15, 0, 0, time.UTC), "log.2026-11-30.gz"},
		{"unix", fileio.WatchConfig{NameLayout: fileio.LayoutUnix, NameRegexp: `^batch-(\d+)\.csv$`}, "batch-1796000000.csv",
			time.Unix(1796000000, 0), "batch-x.csv"},
		{"unix millis", fileio.WatchConfig{NameLayout: fileio.LayoutUnixMilli, NameRegexp: `^(\d+)$`}, "1796000000123",
			time.UnixMilli(1796000000123), "99999999999999999999"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Timestamp, c.cfg.Ready = fileio.TimeName, fileio.ReadyRenamed
			tr := trackerOf(t, c.cfg)
			listing := []Entry{e(c.file, 1, t0), e(c.unknown, 1, t0)}
			ready, notes := tr.Observe(listing, t0)
			if len(ready) != 1 || ready[0].Path != c.file || ready[0].Time != ms(c.want) {
				t.Fatalf("ready %+v, want %s at %v", ready, c.file, c.want)
			}
			if len(notes) != 1 || notes[0].Kind != NoteUnparsed || notes[0].Path != c.unknown {
				t.Errorf("notes %+v, want one NoteUnparsed of %s", notes, c.unknown)
			}
			tr.Take(ready[0], t0)
			if _, notes = tr.Observe(listing, t0.Add(time.Second)); len(notes) != 0 {
				t.Errorf("second listing: notes %+v, want none: a name is reported once", notes)
			}
			if s := tr.Stats(); s.Unparsed != 1 || s.Files != 1 {
				t.Errorf("stats %+v, want 1 unparsed, 1 file", s)
			}
		})
	}
}

// TestLateFiles: a file whose time is behind the watermark sent is read
// and counted late; with a retention, files far behind are forgotten, a
// forgotten one still in the folder is not read again, and a new one
// that far behind is read, late.
func TestLateFiles(t *testing.T) {
	tr := trackerOf(t, fileio.WatchConfig{Ready: fileio.ReadyRenamed, RetentionMillis: 60_000})
	step(tr, t0, e("a", 1, ev(0)))
	_, wm := step(tr, t0.Add(time.Second), e("a", 1, ev(0)), e("b", 1, ev(100)))
	checkWM(t, "b read", wm, ev(100))
	if s := tr.Stats(); s.Seen != 1 {
		t.Errorf("remembered %d files, want 1: a is 100 s behind, past the 60 s retention", s.Seen)
	}
	ready, _ := tr.Observe([]Entry{e("a", 1, ev(0)), e("b", 1, ev(100)), e("c", 1, ev(90)), e("d", 1, ev(10))}, t0.Add(2*time.Second))
	var paths []string
	for _, f := range ready {
		paths = append(paths, f.Path)
		if !tr.Take(f, t0.Add(2*time.Second)) {
			t.Errorf("%s at %v taken as on time, behind the watermark %v", f.Path, f.Time, wm)
		}
	}
	check(t, "late arrivals", paths, []string{"d", "c"})
	if s := tr.Stats(); s.Late != 2 || s.Files != 4 {
		t.Errorf("stats %+v, want 4 files, 2 late", s)
	}
}

// TestRestore: a tracker restored from a snapshot (through JSON, as a
// checkpoint keeps it) reads neither a file it had read nor skips one it
// had not; the watermark resumes where it was; a file behind the horizon
// the snapshot does not name is not read, and reported.
func TestRestore(t *testing.T) {
	cfg := fileio.WatchConfig{Ready: fileio.ReadyRenamed, MaxOutOfOrdernessMillis: 1000, RetentionMillis: 60_000}
	tr := trackerOf(t, cfg)
	step(tr, t0, e("old", 1, ev(0)), e("a", 1, ev(100)), e("b", 1, ev(110)))
	b, err := json.Marshal(tr.State())
	if err != nil {
		t.Fatal(err)
	}
	var st trackerState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = "/in"
	tc, _ := newTrackerConfig(&cfg)
	re, err := restoreTracker(tc, st, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if wm, _ := re.Watermark(t0.Add(time.Minute)); wm != ms(ev(109)) {
		t.Errorf("restored watermark %v, want %v", wm.ToTime().UTC(), ev(109))
	}
	ready, notes := re.Observe([]Entry{e("old", 1, ev(0)), e("gone", 1, ev(5)), e("a", 1, ev(100)), e("b", 1, ev(110)), e("c", 1, ev(105))}, t0.Add(time.Minute))
	var paths []string
	for _, f := range ready {
		paths = append(paths, f.Path)
	}
	check(t, "after restore", paths, []string{"c"})
	var amb []string
	for _, n := range notes {
		if n.Kind == NoteAmbiguous {
			amb = append(amb, n.Path)
		}
	}
	slices.Sort(amb)
	check(t, "ambiguous after restore", amb, []string{"gone", "old"})
	if re.Take(ready[0], t0.Add(time.Minute)) != true {
		t.Errorf("c at %v behind the restored watermark is not late", ready[0].Time)
	}
	if re.Taken() != 4 {
		t.Errorf("taken %d, want 4: the restored count goes on", re.Taken())
	}
}

// TestSplitByFolderIdle: with a watermark per first-level folder, a quiet
// folder holds the watch's watermark back until its idle timeout, then
// leaves the minimum until its next file.
func TestSplitByFolderIdle(t *testing.T) {
	tr := trackerOf(t, fileio.WatchConfig{Ready: fileio.ReadyRenamed, Recursive: true, SplitByFolder: true, IdleTimeoutMillis: 10_000})
	_, wm := step(tr, t0, e("east/1", 1, ev(10)), e("west/1", 1, ev(50)))
	checkWM(t, "both folders", wm, ev(10))
	listing := []Entry{e("east/1", 1, ev(10)), e("west/1", 1, ev(50)), e("west/2", 1, ev(80))}
	_, wm = step(tr, t0.Add(5*time.Second), listing...)
	checkWM(t, "east quiet 5 s", wm, ev(10))
	_, wm = step(tr, t0.Add(11*time.Second), listing...)
	checkWM(t, "east idle", wm, ev(80))
	listing = append(listing, e("east/2", 1, ev(90)))
	_, wm = step(tr, t0.Add(12*time.Second), listing...)
	checkWM(t, "east back", wm, ev(80))
	names := []string{}
	for _, s := range tr.Splits() {
		names = append(names, s.Name)
	}
	check(t, "splits", names, []string{"east", "west"})
}
