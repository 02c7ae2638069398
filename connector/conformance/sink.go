package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/twophase/twophasetest"
)

// SinkHarness is one connector's sink under test, over an external system
// of its own (a topic, a folder, a table) that every instance it makes
// shares, as the processes of one job would.
type SinkHarness interface {
	// New returns a new instance of the sink, as a new process makes it.
	New(t testing.TB) twophase.Sink
	// Element returns the input element (a windowed value, as the sink's
	// input delivers it) that writes value v.
	Element(v string) []byte
	// Committed returns the values a reader sees as committed, each as
	// often as it sees it, in any order.
	Committed(t testing.TB) []string
}

// Stager is implemented by harnesses that can list what their sink
// staged outside the store and has not committed (files' temporary
// files): after every case it must be empty, because a restored sink
// aborts what no checkpoint holds.
type Stager interface {
	Staged(t testing.TB) []string
}

// SinkCase is one script.
type SinkCase struct {
	Name, Doc string
	Steps     []Step
	// Once are the values that must be committed exactly once; Repeat,
	// those that must be committed at least once (a restore replayed what
	// was committed after its checkpoint). Nothing else may be.
	Once, Repeat []string
}

// Step is one step of a script; see the constructors.
type Step struct {
	op   string
	vals []string
	id   twophase.Epoch
	name string
	n    int
}

// Write hands the values to the sink in one batch.
func Write(vals ...string) Step { return Step{op: "write", vals: vals} }

// Barrier delivers Barrier(id): the sink prepares its open epoch.
func Barrier(id twophase.Epoch) Step { return Step{op: "barrier", id: id} }

// Snapshot takes checkpoint name: a copy of the sink's store namespace as
// it is now, as the runner's snapshot after a barrier.
func Snapshot(name string) Step { return Step{op: "snapshot", name: name} }

// Complete delivers CheckpointComplete(id).
func Complete(id twophase.Epoch) Step { return Step{op: "complete", id: id} }

// Finish ends the input: the sink commits everything.
func Finish() Step { return Step{op: "finish"} }

// Crash drops the sink without a word and starts a new one over the store
// of checkpoint name; "" starts one over a fresh store, as a job started
// afresh.
func Crash(name string) Step { return Step{op: "crash", name: name} }

// FailCommits makes the next n commits fail before they take effect.
func FailCommits(n int) Step { return Step{op: "fail-before", n: n} }

// LoseReplies makes the next n commits take effect and then fail, as a
// commit whose reply was lost.
func LoseReplies(n int) Step { return Step{op: "fail-after", n: n} }

// CrashInCommit makes the next commit take effect and then crash the
// process before the driver hears of it; the next step must be a Crash.
func CrashInCommit() Step { return Step{op: "crash-in-commit"} }

// Retried checks how many failed commits the sink's driver retried since
// the last crash.
func Retried(n int) Step { return Step{op: "retried", n: n} }

// Expect checks what is committed now: each value exactly once.
func Expect(vals ...string) Step { return Step{op: "expect", vals: vals} }

func (s Step) String() string {
	switch s.op {
	case "write", "expect":
		return fmt.Sprintf("%s %s", s.op, strings.Join(s.vals, " "))
	case "barrier", "complete":
		return fmt.Sprintf("%s %d", s.op, s.id)
	case "snapshot", "crash":
		return fmt.Sprintf("%s %q", s.op, s.name)
	case "fail-before", "fail-after", "retried":
		return fmt.Sprintf("%s %d", s.op, s.n)
	}
	return s.op
}

// RunSink runs every case of SinkCases against the connector named name;
// each case gets a harness of its own from newHarness.
func RunSink(t *testing.T, name string, newHarness func(t *testing.T) SinkHarness) {
	rec := newRecorder(name, "sink")
	for _, c := range SinkCases() {
		ok := t.Run(c.Name, func(t *testing.T) { runSinkCase(t, c, newHarness(t)) })
		rec.add(c.Name, ok)
	}
	rec.write(t)
}

// sinkRun is the state of one script.
type sinkRun struct {
	t       *testing.T
	h       SinkHarness
	store   *state.Store
	d       *twophase.Driver
	f       *faulty
	snaps   map[string]func() *state.Store
	retries int
	// giveUp ends a commit retried maxRetries times: it would never
	// succeed, and the script would not end.
	giveUp context.CancelCauseFunc
}

const maxRetries = 50

const namespace = "sink/0"

func runSinkCase(t *testing.T, c SinkCase, h SinkHarness) {
	ctx, giveUp := context.WithCancelCause(context.Background())
	defer giveUp(nil)
	r := &sinkRun{t: t, h: h, snaps: map[string]func() *state.Store{}, giveUp: giveUp}
	r.start(twophasetest.Store(t))
	dead := false
	for i, s := range c.Steps {
		if dead && s.op != "crash" {
			t.Fatalf("step %d (%s) after the process crashed: the script must crash next", i, s)
		}
		err := r.step(ctx, s)
		dead = errors.Is(err, errCrashed)
		if err != nil && !dead {
			t.Fatalf("step %d (%s): %v", i, s, err)
		}
	}
	r.check(c.Once, c.Repeat)
	if st, ok := h.(Stager); ok {
		if left := st.Staged(t); len(left) > 0 {
			t.Errorf("staging left after the script: %q", left)
		}
	}
}

// start makes a sink over store, as a process starting does.
func (r *sinkRun) start(store *state.Store) {
	r.store, r.retries = store, 0
	r.f = &faulty{Sink: r.h.New(r.t)}
	r.d = &twophase.Driver{Sink: r.f, Pending: twophase.NewPending(store, namespace, "sink[0]"), Name: "sink[0]",
		OnRetry: func(err error) {
			if r.retries++; r.retries == maxRetries {
				r.giveUp(fmt.Errorf("commit retried %d times: %w", maxRetries, err))
			}
		},
		Backoff: func(int) time.Duration { return 0 }}
}

func (r *sinkRun) step(ctx context.Context, s Step) error {
	switch s.op {
	case "write":
		var elems [][]byte
		for _, v := range s.vals {
			elems = append(elems, r.h.Element(v))
		}
		return r.d.Process(ctx, 0, elems)
	case "barrier":
		return r.d.Barrier(ctx, s.id)
	case "snapshot":
		r.snaps[s.name] = twophasetest.Checkpoint(r.t, r.store, namespace)
		return nil
	case "complete":
		return r.d.CheckpointComplete(ctx, s.id)
	case "finish":
		return r.d.Finish(ctx)
	case "crash":
		if s.name == "" {
			r.start(twophasetest.Store(r.t))
			return nil
		}
		restore, ok := r.snaps[s.name]
		if !ok {
			return fmt.Errorf("no checkpoint %q", s.name)
		}
		r.start(restore())
		return nil
	case "fail-before":
		r.f.failBefore += s.n
		return nil
	case "fail-after":
		r.f.failAfter += s.n
		return nil
	case "crash-in-commit":
		r.f.crash = true
		return nil
	case "expect":
		r.check(s.vals, nil)
		return nil
	case "retried":
		if r.retries != s.n {
			return fmt.Errorf("%d commits retried, want %d", r.retries, s.n)
		}
		return nil
	}
	return fmt.Errorf("unknown step %q", s.op)
}

// check compares what is committed with once (exactly once each) and
// repeat (at least once each).
func (r *sinkRun) check(once, repeat []string) {
	r.t.Helper()
	got := r.h.Committed(r.t)
	count := map[string]int{}
	for _, v := range got {
		count[v]++
	}
	var bad []string
	for _, v := range once {
		if count[v] != 1 {
			bad = append(bad, fmt.Sprintf("%s %d times, want once", v, count[v]))
		}
		delete(count, v)
	}
	for _, v := range repeat {
		if count[v] < 1 {
			bad = append(bad, fmt.Sprintf("%s missing, want at least once", v))
		}
		delete(count, v)
	}
	for v, n := range count {
		bad = append(bad, fmt.Sprintf("%s %d times, want none", v, n))
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		slices.Sort(got)
		r.t.Errorf("committed %q: %s", got, strings.Join(bad, "; "))
	}
}

// errCrashed is what a commit returns when the script crashes the process
// in it: permanent, so the driver stops at once, and the script's next
// step is a Crash.
var errCrashed = twophase.Permanent(errors.New("conformance: the process crashed in a commit"))

// faulty wraps the sink under test with the faults a script asks for.
type faulty struct {
	twophase.Sink
	failBefore, failAfter int
	crash                 bool
	crashed               bool
}

var errInjected = errors.New("conformance: injected failure")

// Commit implements twophase.Sink.
func (f *faulty) Commit(ctx context.Context, cs []twophase.Committable) error {
	if f.crashed {
		return errCrashed
	}
	if f.failBefore > 0 {
		f.failBefore--
		return errInjected
	}
	if err := f.Sink.Commit(ctx, cs); err != nil {
		return err
	}
	if f.crash {
		f.crash, f.crashed = false, true
		return errCrashed
	}
	if f.failAfter > 0 {
		f.failAfter--
		return errInjected
	}
	return nil
}
