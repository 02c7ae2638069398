package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// stepSource emits each string it receives and polls for barriers after
// each step; it ends when steps is closed. An empty string emits nothing.
type stepSource struct{ steps chan string }

func (s *stepSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	for {
		select {
		case e, ok := <-s.steps:
			if !ok {
				return nil
			}
			if e != "" {
				if err := out.Emit(ctx, 0, [][]byte{[]byte(e)}); err != nil {
					return err
				}
			}
			if _, err := inj.Poll(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// listenerLog logs every call. Its log is written without a lock, so the
// race detector catches a CheckpointComplete that runs concurrently with
// the other calls.
type listenerLog struct {
	log       []string
	completed chan BarrierID
	fail      error
}

func (l *listenerLog) Process(_ context.Context, _ int, elems [][]byte) error {
	for _, e := range elems {
		l.log = append(l.log, string(e))
	}
	return nil
}
func (l *listenerLog) Watermark(context.Context, int, mtime.Time) error { return nil }
func (l *listenerLog) Barrier(_ context.Context, id BarrierID) error {
	l.log = append(l.log, fmt.Sprint("barrier", id))
	return nil
}
func (l *listenerLog) Finish(context.Context) error { l.log = append(l.log, "finish"); return nil }
func (l *listenerLog) CheckpointComplete(_ context.Context, id BarrierID) error {
	l.log = append(l.log, fmt.Sprint("complete", id))
	l.completed <- id
	return l.fail
}

func listenerGraph(src *stepSource, l *listenerLog, rec *recorder) *Graph {
	return &Graph{
		Checkpoints: rec,
		Nodes: []*Node{
			{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return src, nil }},
			{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{Port: 0, From: 0}},
				New: func(int, *Output) (Operator, error) { return l, nil }},
		},
	}
}

// awaitDone makes the source poll until subtask key (node/sub/id) reports
// the barrier: the graph injects a barrier some time after it took it.
func awaitDone(src *stepSource, rec *recorder, key string) {
	for {
		select {
		case src.steps <- "":
		case k := <-rec.doneC:
			if k == key {
				return
			}
		}
	}
}

// TestCheckpointCompleteReachesListener: a completion reaches the
// operator in its own goroutine, after the barrier of that checkpoint and
// before data sent after the completion; operators that are not listeners
// are not registered.
func TestCheckpointCompleteReachesListener(t *testing.T) {
	src := &stepSource{steps: make(chan string)}
	l := &listenerLog{completed: make(chan BarrierID, 1)}
	rec := newRecorder()
	g := listenerGraph(src, l, rec)
	bar := make(chan BarrierID)
	errc := make(chan error, 1)
	go func() { errc <- g.Run(context.Background(), bar) }()
	for id := BarrierID(1); id <= 2; id++ {
		src.steps <- fmt.Sprint("rec", id)
		bar <- id
		awaitDone(src, rec, fmt.Sprint("1/0/", id))
		g.CheckpointComplete(id)
		if got := <-l.completed; got != id {
			t.Fatalf("completion %d delivered as %d", id, got)
		}
	}
	close(src.steps)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	want := []string{"rec1", "barrier1", "complete1", "rec2", "barrier2", "complete2", "finish"}
	if !slices.Equal(l.log, want) {
		t.Errorf("calls %v, want %v", l.log, want)
	}
	if len(g.listeners) != 1 || g.listeners[0].node != 1 {
		t.Errorf("listeners %v, want the sink only", g.listeners)
	}
}

// TestCheckpointCompleteErrorFailsJob: a commit that cannot succeed fails
// the job, naming the checkpoint.
func TestCheckpointCompleteErrorFailsJob(t *testing.T) {
	src := &stepSource{steps: make(chan string)}
	l := &listenerLog{completed: make(chan BarrierID, 1), fail: errors.New("fenced")}
	rec := newRecorder()
	g := listenerGraph(src, l, rec)
	bar := make(chan BarrierID)
	errc := make(chan error, 1)
	go func() { errc <- g.Run(context.Background(), bar) }()
	bar <- 1
	awaitDone(src, rec, "1/0/1")
	g.CheckpointComplete(1)
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "commit of checkpoint 1: fenced") {
		t.Fatalf("Run returned %v, want the commit's failure", err)
	}
}

// TestCompletionsCoalesce: completions posted before the subtask takes
// them coalesce into the newest; an older one never replaces a newer one.
func TestCompletionsCoalesce(t *testing.T) {
	for _, tc := range []struct {
		posts []BarrierID
		want  BarrierID
	}{
		{nil, 0},
		{[]BarrierID{3}, 3},
		{[]BarrierID{3, 4, 5}, 5},
		{[]BarrierID{5, 4}, 5},
	} {
		c := newCompletions()
		for _, id := range tc.posts {
			c.post(id)
		}
		if len(tc.posts) > 0 && len(c.ready) != 1 {
			t.Errorf("%v: %d tokens, want 1", tc.posts, len(c.ready))
		}
		if got := c.take(); got != tc.want {
			t.Errorf("%v: took %d, want %d", tc.posts, got, tc.want)
		}
		if got := c.take(); got != 0 {
			t.Errorf("%v: second take %d, want 0", tc.posts, got)
		}
	}
}
