package webui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weir-runner/weir/jobview"
)

// streamingFake is a Backend with one live streaming job, "stream-1", whose
// sample moves on each time it is read (as the runner's would once a
// second), and three finished jobs for the list. Drain moves the job to
// DRAINING and, one read later, DRAINED with its watermarks at +∞.
type streamingFake struct {
	start time.Time // the stream's submission

	mu struct {
		sync.Mutex
		polls          int // reads of stream-1 so far
		state          string
		drainedAt      int // the poll at which DRAINING becomes DRAINED
		savepoints     int
		failSavepoints bool
	}
}

const streamID = "stream-1"

func newStreamingFake() *streamingFake {
	f := &streamingFake{start: time.Date(2026, 12, 1, 11, 40, 0, 0, time.UTC)}
	f.mu.state = "RUNNING"
	return f
}

// Polls returns how many times stream-1 has been read.
func (f *streamingFake) Polls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.polls
}

func (f *streamingFake) FailSavepoints(fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.failSavepoints = fail
}

// finished are the list's other jobs; their pages show their last sample.
var finished = []jobview.Summary{
	{ID: "batch-7", Name: "nightly-backfill", State: "DONE",
		Start: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), End: time.Date(2026, 12, 1, 2, 47, 12, 0, time.UTC), Seconds: 2832},
	{ID: "clicks-3", Name: "clicks-enrich", State: "FAILED",
		Start: time.Date(2026, 12, 1, 9, 12, 0, 0, time.UTC), End: time.Date(2026, 12, 1, 9, 13, 5, 0, time.UTC), Seconds: 65,
		Error: "stage Parse JSON subtask 2: bundle failed 3 times: invalid character '}' looking for beginning of value"},
	{ID: "adhoc-2", Name: "adhoc-count", State: "CANCELLED",
		Start: time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC), End: time.Date(2026, 12, 1, 10, 31, 30, 0, time.UTC), Seconds: 90},
}

func (f *streamingFake) Jobs() []jobview.Summary {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]jobview.Summary{f.summaryLocked()}, finished...)
}

func (f *streamingFake) summaryLocked() jobview.Summary {
	s := jobview.Summary{ID: streamID, Name: "clicks-per-user", State: f.mu.state, Start: f.start,
		Seconds: 1200 + float64(f.mu.polls)}
	if s.State == "DRAINED" || s.State == "CANCELLED" {
		s.End = f.start.Add(time.Duration(s.Seconds) * time.Second)
	}
	return s
}

func (f *streamingFake) Job(id string) (jobview.Job, bool) {
	if id != streamID {
		for _, s := range finished {
			if s.ID == id {
				return jobview.Job{Summary: s, SampledAt: s.End}, true
			}
		}
		return jobview.Job{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.polls++
	if f.mu.state == "DRAINING" && f.mu.polls >= f.mu.drainedAt {
		f.mu.state = "DRAINED"
	}
	return sample(f.summaryLocked(), f.mu.polls, f.mu.savepoints), true
}

func (f *streamingFake) Cancel(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.runningLocked(id); err != nil {
		return err
	}
	f.mu.state = "CANCELLED"
	return nil
}

func (f *streamingFake) Drain(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.runningLocked(id); err != nil {
		return err
	}
	f.mu.state = "DRAINING"
	f.mu.drainedAt = f.mu.polls + 2 // one sample shows DRAINING
	return nil
}

func (f *streamingFake) Savepoint(_ context.Context, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.runningLocked(id); err != nil {
		return "", err
	}
	if f.mu.failSavepoints {
		return "", errors.New("checkpoint: writing savepoint: no space left on device")
	}
	f.mu.savepoints++
	return fmt.Sprintf("/var/lib/weir/savepoints/%s/sp-%d", id, f.mu.savepoints), nil
}

func (f *streamingFake) runningLocked(id string) error {
	if id != streamID {
		for _, s := range finished {
			if s.ID == id {
				return fmt.Errorf("fake: job %s is %s: %w", id, s.State, ErrConflict)
			}
		}
		return fmt.Errorf("fake: job %s: %w", id, ErrNotFound)
	}
	if f.mu.state != "RUNNING" {
		return fmt.Errorf("fake: job %s is %s: %w", id, f.mu.state, ErrConflict)
	}
	return nil
}
