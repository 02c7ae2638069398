package filesource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/watermarkmgr"
)

// Source is the executor node of a folder watch, one subtask: it lists
// the folder every poll interval, reads each file the Tracker says is
// ready, in event-time order, and emits its elements (a row per file, or
// a KV per line) and the watermark. It ends, its watermark at +inf, when a
// bounded watch reaches its bound or the job is drained.
type Source struct {
	Config *fileio.WatchConfig
	// Folder opens the watched folder (OSFolder(Config.Dir)).
	Folder Folder
	// Name names the source in messages: the stage.
	Name string
	// Drain, if set, is closed when the job is drained: the watch ends
	// where it is, as a bounded one that reached its bound does.
	Drain <-chan struct{}
	// Warnf reports what the job's messages should say; Retried, errors
	// the watch retries (a folder it cannot list). Both optional.
	Warnf   func(format string, args ...any)
	Retried func(error)
	// Now is the processing time; time.Now if nil.
	Now func() time.Time
	// Batch bounds the lines of one emission (barriers enter between
	// emissions); 512 if 0.
	Batch int
}

// sourceState is a snapshot of a watch: the tracker's files and
// watermark, the file being read in lines mode and how far, and the
// processing times the bounds count from.
type sourceState struct {
	Tracker trackerState `json:"tracker"`
	Current *current     `json:"current,omitempty"`
	// StartedMillis is when the watch first started (stop_after counts
	// from it, across restores); FoundMillis when it last found a file
	// (stop_after_idle counts from it).
	StartedMillis int64 `json:"started_ms"`
	FoundMillis   int64 `json:"found_ms"`
}

// current is the file a watch in lines mode is reading: its lines before
// Offset (bytes) are emitted.
type current struct {
	Path   string `json:"path"`
	Time   int64  `json:"time"`
	Offset int64  `json:"offset"`
}

// watch is one run of a Source.
type watch struct {
	*Source
	tr             *Tracker
	cur            *current
	started, found time.Time
	// missing: the folder was missing at the last poll (warned once).
	missing bool
}

// Run implements executor.Source.
func (s *Source) Run(ctx context.Context, out *executor.Output, inj *executor.Injector) error {
	w, err := s.start(inj.Restored())
	if err != nil {
		return fmt.Errorf("file watch %s: %w", s.Name, err)
	}
	inj.OnSnapshot(w.snapshot)
	for {
		if _, err := inj.Poll(); err != nil {
			return err
		}
		if w.drained() || w.over(w.now()) {
			break
		}
		if err := w.poll(ctx, out, inj); err != nil {
			return err
		}
		if w.drained() || w.over(w.now()) {
			break
		}
		if err := w.wait(ctx, inj); err != nil {
			return err
		}
	}
	if _, err := inj.Poll(); err != nil {
		return err
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

// start makes the run's state: fresh, or from a snapshot.
func (s *Source) start(restored []byte) (*watch, error) {
	cfg, err := newTrackerConfig(s.Config)
	if err != nil {
		return nil, err
	}
	w := &watch{Source: s}
	now := w.now()
	if restored == nil {
		w.tr, w.started, w.found = newTracker(cfg, now), now, now
		return w, nil
	}
	var st sourceState
	if err := json.Unmarshal(restored, &st); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if w.tr, err = restoreTracker(cfg, st.Tracker, now); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	w.cur, w.started, w.found = st.Current, time.UnixMilli(st.StartedMillis), time.UnixMilli(st.FoundMillis)
	return w, nil
}

// newTrackerConfig makes a tracker's configuration of a watch's.
func newTrackerConfig(c *fileio.WatchConfig) (trackerConfig, error) {
	st, err := newStamper(c)
	if err != nil {
		return trackerConfig{}, err
	}
	return trackerConfig{
		stamp: st, renamed: c.Ready == fileio.ReadyRenamed, splitByFolder: c.SplitByFolder,
		splits: watermarkmgr.SplitsConfig{
			OutOfOrderness: time.Duration(c.MaxOutOfOrdernessMillis) * time.Millisecond,
			IdleTimeout:    time.Duration(c.IdleTimeoutMillis) * time.Millisecond,
		},
		retention: time.Duration(c.RetentionMillis) * time.Millisecond,
	}, nil
}

func (w *watch) snapshot() ([]byte, error) {
	return json.Marshal(sourceState{Tracker: w.tr.State(), Current: w.cur,
		StartedMillis: w.started.UnixMilli(), FoundMillis: w.found.UnixMilli()})
}

func (w *watch) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *watch) drained() bool {
	select {
	case <-w.Drain:
		return true
	default:
		return false
	}
}

// over reports whether a bounded watch has reached its bound. A file half
// read in lines mode is finished first.
func (w *watch) over(now time.Time) bool {
	c := w.Config
	if w.cur != nil {
		return false
	}
	return c.MaxFiles > 0 && w.tr.Taken() >= c.MaxFiles ||
		c.StopAfterMillis > 0 && now.Sub(w.started) >= time.Duration(c.StopAfterMillis)*time.Millisecond ||
		c.StopAfterIdleMillis > 0 && now.Sub(w.found) >= time.Duration(c.StopAfterIdleMillis)*time.Millisecond
}

// full reports whether MaxFiles files are taken: no more are.
func (w *watch) full() bool { return w.Config.MaxFiles > 0 && w.tr.Taken() >= w.Config.MaxFiles }

// poll lists the folder once, reads what is ready and sends the
// watermark.
func (w *watch) poll(ctx context.Context, out *executor.Output, inj *executor.Injector) error {
	fsys, closeFolder, err := w.Folder()
	if err != nil {
		w.folderError(err)
		return nil
	}
	defer closeFolder()
	w.missing = false
	if w.cur != nil {
		if err := w.readLines(ctx, out, inj, fsys); err != nil || w.cur != nil {
			return err // drained mid-file, or failed
		}
	}
	listing, err := list(fsys, w.Config.GlobPattern(), w.Config.Recursive)
	if err != nil {
		w.retried(fmt.Errorf("file watch %s: list %s: %w", w.Name, w.Config.Dir, err))
		return nil
	}
	now := w.now()
	ready, notes := w.tr.Observe(listing, now)
	w.report(notes)
	if len(ready) > 0 {
		w.found = now
	}
	if w.Config.Lines() {
		err = w.takeLines(ctx, out, inj, fsys, ready)
	} else {
		err = w.takeFiles(ctx, out, inj, ready)
	}
	if err != nil {
		return err
	}
	if wm, ok := w.tr.Watermark(w.now()); ok {
		return out.Watermark(ctx, wm)
	}
	return nil
}

// folderError reports a folder that cannot be opened: missing (it may be
// made later) once, other errors as retried ones.
func (w *watch) folderError(err error) {
	if errors.Is(err, fs.ErrNotExist) {
		if !w.missing {
			w.warnf("file watch %s: folder %s does not exist; the watch waits for it", w.Name, w.Config.Dir)
		}
		w.missing = true
		return
	}
	w.retried(fmt.Errorf("file watch %s: open %s: %w", w.Name, w.Config.Dir, err))
}

// takeFiles emits a row per ready file, Batch at a time.
func (w *watch) takeFiles(ctx context.Context, out *executor.Output, inj *executor.Injector, ready []File) error {
	for len(ready) > 0 && !w.full() && !w.drained() {
		n := min(len(ready), w.batch())
		if m := w.Config.MaxFiles; m > 0 {
			n = int(min(int64(n), m-w.tr.Taken()))
		}
		var buf []byte
		elems := make([][]byte, n)
		for i, f := range ready[:n] {
			start := len(buf)
			buf = appendFileRow(buf, w.fullPath(f.Path), f.Size, f.Mod.UnixMilli(), f.Time)
			elems[i] = buf[start:len(buf):len(buf)]
		}
		if err := out.Emit(ctx, 0, elems); err != nil {
			return err
		}
		for _, f := range ready[:n] {
			w.take(f)
		}
		ready = ready[n:]
		if _, err := inj.Poll(); err != nil {
			return err
		}
	}
	return nil
}

// takeLines reads each ready file's lines.
func (w *watch) takeLines(ctx context.Context, out *executor.Output, inj *executor.Injector, fsys fs.FS, ready []File) error {
	for _, f := range ready {
		if w.full() || w.drained() {
			return nil
		}
		w.take(f)
		w.cur = &current{Path: f.Path, Time: int64(f.Time)}
		if err := w.readLines(ctx, out, inj, fsys); err != nil || w.cur != nil {
			return err
		}
	}
	return nil
}

// take records that f is read, and reports it if it is late.
func (w *watch) take(f File) {
	if w.tr.Take(f, w.now()) {
		w.warnf("file watch %s: file %s (time %v) is behind the watermark already sent: its elements are late",
			w.Name, w.fullPath(f.Path), f.Time.ToTime().UTC())
	}
}

func (w *watch) report(notes []Note) {
	for _, n := range notes {
		switch n.Kind {
		case NoteUnparsed:
			w.warnf("file watch %s: file %s is not read: %v", w.Name, w.fullPath(n.Path), n.Err)
		case NoteAmbiguous:
			w.warnf("file watch %s: file %s is not read: its time is behind the restored checkpoint's retention horizon and the checkpoint does not name it (read and forgotten, or arrived while the job was down)",
				w.Name, w.fullPath(n.Path))
		}
	}
}

// wait waits a poll interval, forwarding barriers meanwhile; a drain
// ends it early.
func (w *watch) wait(ctx context.Context, inj *executor.Injector) error {
	d := w.Config.PollInterval()
	tick := time.NewTicker(min(d, 20*time.Millisecond))
	defer tick.Stop()
	deadline := time.Now().Add(d)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.Drain:
			return nil
		case <-tick.C:
		}
		if _, err := inj.Poll(); err != nil {
			return err
		}
		if !time.Now().Before(deadline) {
			return nil
		}
	}
}

func (w *watch) batch() int {
	if w.Batch > 0 {
		return w.Batch
	}
	return 512
}

// fullPath is the path of a file below the folder as elements carry it.
func (w *watch) fullPath(rel string) string {
	return filepath.Join(w.Config.Dir, filepath.FromSlash(rel))
}

func (w *watch) warnf(format string, args ...any) {
	if w.Warnf != nil {
		w.Warnf(format, args...)
	}
}

func (w *watch) retried(err error) {
	if w.Retried != nil {
		w.Retried(err)
	}
}
