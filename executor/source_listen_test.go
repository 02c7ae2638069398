package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// listeningSource is a stepSource that is a CheckpointListener and an
// EndListener. Its log is written without a lock: the race detector
// catches a completion delivered outside the source's goroutine.
type listeningSource struct {
	stepSource
	log       []string
	completed chan BarrierID
	ended     chan error
}

func (s *listeningSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	inj.OnSnapshot(func() ([]byte, error) {
		s.log = append(s.log, fmt.Sprint("snapshot", inj.Barrier()))
		return nil, nil
	})
	return s.stepSource.Run(ctx, out, inj)
}

func (s *listeningSource) CheckpointComplete(_ context.Context, id BarrierID) error {
	s.log = append(s.log, fmt.Sprint("complete", id))
	s.completed <- id
	return nil
}

func (s *listeningSource) GraphEnded(_ context.Context, err error) error {
	s.ended <- err
	return nil
}

// TestSourceHearsCompletions: a source that is a CheckpointListener hears
// of completed checkpoints in its own goroutine, in Injector.Poll, after
// its snapshot of that checkpoint (Barrier names it there); it is not one
// of the listeners WaitCommitted waits for. An EndListener hears how the
// graph ended once every subtask has returned.
func TestSourceHearsCompletions(t *testing.T) {
	src := &listeningSource{stepSource: stepSource{steps: make(chan string)},
		completed: make(chan BarrierID, 1), ended: make(chan error, 1)}
	sink := &listenerLog{completed: make(chan BarrierID, 1)}
	rec := newRecorder()
	g := &Graph{
		Checkpoints: rec,
		Nodes: []*Node{
			{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return src, nil }},
			{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{Port: 0, From: 0}},
				New: func(int, *Output) (Operator, error) { return sink, nil }},
		},
	}
	bar := make(chan BarrierID)
	errc := make(chan error, 1)
	go func() { errc <- g.Run(context.Background(), bar) }()
	bar <- 1
	awaitDone(&src.stepSource, rec, "1/0/1")
	g.CheckpointComplete(1)
	<-sink.completed
	// The source hears of it at its next poll.
	src.steps <- ""
	if got := <-src.completed; got != 1 {
		t.Fatalf("source heard of %d, want 1", got)
	}
	if len(g.listeners) != 1 || len(g.sourceListeners) != 1 {
		t.Errorf("%d operator and %d source listeners, want 1 and 1", len(g.listeners), len(g.sourceListeners))
	}
	close(src.steps)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := <-src.ended; err != nil {
		t.Errorf("GraphEnded heard %v, want nil", err)
	}
	if want := []string{"snapshot1", "complete1"}; !slices.Equal(src.log, want) {
		t.Errorf("source calls %v, want %v", src.log, want)
	}
}

// TestEndListenerHearsFailure: a graph that fails tells its sources so.
func TestEndListenerHearsFailure(t *testing.T) {
	src := &listeningSource{stepSource: stepSource{steps: make(chan string)},
		completed: make(chan BarrierID, 1), ended: make(chan error, 1)}
	boom := errors.New("boom")
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return src, nil }},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{Port: 0, From: 0}},
			New: func(int, *Output) (Operator, error) { return &failingOp{err: boom}, nil }},
	}}
	errc := make(chan error, 1)
	go func() { errc <- g.Run(context.Background(), nil) }()
	src.steps <- "x"
	close(src.steps)
	err := <-errc
	if !errors.Is(err, boom) {
		t.Fatalf("Run returned %v, want boom", err)
	}
	if got := <-src.ended; !errors.Is(got, boom) {
		t.Errorf("GraphEnded heard %v, want the graph's error %v", got, err)
	}
}

// failingOp fails its first Process.
type failingOp struct {
	listenerLog
	err error
}

func (f *failingOp) Process(context.Context, int, [][]byte) error { return f.err }
