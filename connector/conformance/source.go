package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weir-runner/weir/executor"
)

// SourceHarness is one connector's source under test, over an input of
// its own that every instance it makes reads, as the processes of one job
// would.
type SourceHarness interface {
	// New returns a new instance of the source, as a new process makes it;
	// it resumes from Injector.Restored when the graph is restored. It ends
	// once it has read the whole input.
	New(t testing.TB) executor.Source
	// Parts returns the input, in parts; Feed(i) makes part i readable.
	// The suite feeds part 0 before it starts the source, the others as
	// the case goes.
	Parts() [][]string
	Feed(t testing.TB, part int)
	// Value decodes an element the source emitted.
	Value(elem []byte) (string, error)
}

// SourceCase is one script: checkpoints, crashes and restores around a
// running source. After it, the output collected (cut at the barrier of
// each checkpoint a restore started from) must be the input exactly once.
type SourceCase struct {
	Name, Doc string
	run       func(s *sourceRun)
}

// SourceCases returns the source scripts.
func SourceCases() []SourceCase {
	return []SourceCase{
		{Name: "read-all", Doc: "read to the end without checkpoints: the input once", run: func(s *sourceRun) {
			s.start(nil)
			s.feedAll()
			s.wait()
		}},
		{Name: "restore-mid-stream", Doc: "crash after a completed checkpoint and more reads, restore from it: exactly the rest is read", run: func(s *sourceRun) {
			s.start(nil)
			s.checkpoint(1)
			s.feed(1)
			s.more()
			s.crash()
			s.start(s.snapshot(1))
			s.feedAll()
			s.wait()
		}},
		{Name: "restore-twice", Doc: "crash again before any new checkpoint, restore from the same one again", run: func(s *sourceRun) {
			s.start(nil)
			s.checkpoint(1)
			s.crash()
			s.start(s.snapshot(1))
			s.feed(1)
			s.more()
			s.crash()
			s.start(s.snapshot(1))
			s.feedAll()
			s.wait()
		}},
		{Name: "restore-chain", Doc: "a restored source checkpoints, crashes and is restored from its own checkpoint", run: func(s *sourceRun) {
			s.start(nil)
			s.checkpoint(1)
			s.crash()
			s.start(s.snapshot(1))
			s.feed(1)
			s.checkpoint(2)
			s.more()
			s.crash()
			s.start(s.snapshot(2))
			s.feedAll()
			s.wait()
		}},
		{Name: "notifications", Doc: "completions heard twice, late, and for checkpoints never taken change nothing", run: func(s *sourceRun) {
			s.start(nil)
			s.checkpoint(1)
			s.g.CheckpointComplete(1)
			s.g.CheckpointComplete(7)
			s.feedAll()
			s.checkpoint(2)
			s.g.CheckpointComplete(1)
			s.wait()
			s.g.CheckpointComplete(2)
		}},
		{Name: "restore-after-end", Doc: "restored from a checkpoint taken after the source ended: nothing is read again", run: func(s *sourceRun) {
			s.start(nil)
			s.feedAll()
			s.ended()
			s.checkpoint(1)
			s.crash()
			s.start(s.snapshot(1))
			s.wait()
		}},
	}
}

// RunSource runs every case of SourceCases against the connector named
// name; each case gets a harness of its own from newHarness.
func RunSource(t *testing.T, name string, newHarness func(t *testing.T) SourceHarness) {
	rec := newRecorder(name, "source")
	for _, c := range SourceCases() {
		ok := t.Run(c.Name, func(t *testing.T) {
			s := &sourceRun{t: t, h: newHarness(t), fed: map[int]bool{}}
			defer s.stop()
			c.run(s)
			s.check()
		})
		rec.add(c.Name, ok)
	}
	rec.write(t)
}

// sourceRun is the state of one script: the graph running, the output
// kept from earlier runs, the checkpoints taken.
type sourceRun struct {
	t     *testing.T
	h     SourceHarness
	fed   map[int]bool
	kept  []string // output of crashed runs, up to their restored barrier
	g     *executor.Graph
	col   *collector
	cp    *checkpoints
	snaps map[executor.BarrierID]*snap
	// barriers feeds g; cancel and done stop it and say it stopped;
	// running says done has not been read.
	barriers chan executor.BarrierID
	cancel   context.CancelFunc
	done     chan error
	running  bool
	// from is the checkpoint the running graph was restored from.
	from *snap
}

// snap is a checkpoint a graph took: the source's part and the
// collector's output up to the barrier.
type snap struct {
	id       executor.BarrierID
	finished bool
	state    []byte
	output   []string
}

func (s *sourceRun) feed(part int) {
	if part < len(s.h.Parts()) && !s.fed[part] {
		s.h.Feed(s.t, part)
		s.fed[part] = true
	}
}

func (s *sourceRun) feedAll() {
	for i := range s.h.Parts() {
		s.feed(i)
	}
}

// start runs a new graph of the source and a collector, restored from
// from (nil: a fresh start). The collector holds the stream at its first
// element until a checkpoint is asked for, so that the barrier lands
// mid-stream.
func (s *sourceRun) start(from *snap) {
	s.feed(0)
	if s.snaps == nil {
		s.snaps = map[executor.BarrierID]*snap{}
	}
	s.from = from
	s.col = newCollector(s.h)
	s.cp = newCheckpoints()
	s.g = &executor.Graph{Checkpoints: s.cp, Nodes: []*executor.Node{
		{Name: "source", Parallelism: 1, Outputs: 1, NewSource: func(int, *executor.Output) (executor.Source, error) {
			return s.h.New(s.t), nil
		}},
		{Name: "collect", Parallelism: 1, Inputs: []executor.NodeInput{{From: 0, Output: 0, Partition: executor.Forward}},
			New: func(int, *executor.Output) (executor.Operator, error) { return s.col, nil }},
	}}
	if from != nil {
		s.g.Restore = func(node, _ int) *executor.SubtaskRestore {
			if node == 0 {
				return &executor.SubtaskRestore{Finished: from.finished, State: from.state}
			}
			return nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done, s.barriers, s.running = cancel, make(chan error, 1), make(chan executor.BarrierID, 1), true
	go func() { s.done <- s.g.Run(ctx, s.barriers) }()
}

// checkpoint takes checkpoint id once the collector has an element (or the
// source ended), completes it, and keeps it for restores: the part of the
// input fed must hold values the running source has not read. The collector
// holds the stream after the barrier until the case goes on.
func (s *sourceRun) checkpoint(id executor.BarrierID) {
	s.t.Helper()
	s.col.waitFor(func() bool { return len(s.col.out) > 0 || s.col.finished })
	s.col.holdAfter(id)
	s.barriers <- id
	s.stepUntilTaken(id)
	s.col.release()
	rec := s.cp.wait(s.t, id, s.done)
	s.col.waitFor(func() bool { _, ok := s.col.cuts[id]; return ok || s.col.finished })
	sn := &snap{id: id, finished: rec.finished, state: rec.state, output: s.keptPlus(s.col.upTo(id))}
	s.snaps[id] = sn
	s.t.Logf("checkpoint %d: %d values before its barrier, source ended: %v", id, len(sn.output), sn.finished)
	s.g.CheckpointComplete(id)
}

// stepUntilTaken lets the held stream on one batch at a time until the
// source has taken barrier id (or ended), so that the barrier lands within
// the executor's buffering of where the stream was held. Released at once,
// the stream could run to the end of what was fed before the barrier got
// there: the goroutine that forwards barriers to the source can wait
// behind the source and the collector, which hand the processor to each
// other, and a case that needs input after the barrier would hang.
func (s *sourceRun) stepUntilTaken(id executor.BarrierID) {
	for {
		took, changed := s.cp.sourceTook(id)
		if took {
			return
		}
		select {
		case s.col.step <- struct{}{}:
		case <-changed:
		case err := <-s.done:
			s.done <- err // the graph stopped: checkpoints.wait says how
			return
		}
	}
}

// keptPlus returns the output of earlier runs this one was restored with,
// and out.
func (s *sourceRun) keptPlus(out []string) []string {
	base := []string(nil)
	if s.from != nil {
		base = s.from.output
	}
	return append(slices.Clone(base), out...)
}

func (s *sourceRun) snapshot(id executor.BarrierID) *snap {
	sn, ok := s.snaps[id]
	if !ok {
		s.t.Fatalf("no checkpoint %d", id)
	}
	return sn
}

// more lets the stream go on until the collector has an element past its
// last cut, or the source ended.
func (s *sourceRun) more() {
	n := len(s.col.snapshot())
	s.col.release()
	s.col.waitFor(func() bool { return len(s.col.out) > n || s.col.finished })
}

// ended waits for the source to have ended (the collector has finished).
func (s *sourceRun) ended() {
	s.col.release()
	s.col.waitFor(func() bool { return s.col.finished })
}

// crash stops the graph as a crash would: nothing is drained or flushed.
func (s *sourceRun) crash() {
	s.stop()
}

// wait runs the graph to its end.
func (s *sourceRun) wait() {
	s.t.Helper()
	s.col.release()
	s.running = false
	if err := <-s.done; err != nil {
		s.t.Fatalf("graph: %v", err)
	}
	s.kept = s.keptPlus(s.col.snapshot())
	s.from = nil
}

// stop cancels the running graph and waits for it.
func (s *sourceRun) stop() {
	if !s.running {
		return
	}
	s.running = false
	s.cancel()
	s.col.release()
	<-s.done
}

// check compares the output with the input: each value exactly once.
func (s *sourceRun) check() {
	s.t.Helper()
	var want []string
	for _, p := range s.h.Parts() {
		want = append(want, p...)
	}
	got := slices.Clone(s.kept)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		s.t.Errorf("read %d values, want %d once each: %s", len(got), len(want), diff(got, want))
	}
}

// diff says which values are missing or repeated.
func diff(got, want []string) string {
	count := map[string]int{}
	for _, v := range got {
		count[v]++
	}
	for _, v := range want {
		count[v]--
	}
	var out []string
	for v, n := range count {
		switch {
		case n < 0:
			out = append(out, fmt.Sprintf("%s missing", v))
		case n > 0:
			out = append(out, fmt.Sprintf("%s %d extra", v, n))
		}
	}
	slices.Sort(out)
	if len(out) > 20 {
		out = append(out[:20], "...")
	}
	return strings.Join(out, ", ")
}
