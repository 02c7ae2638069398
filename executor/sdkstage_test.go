package executor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/fnapi/fnapitest"
	"github.com/weir-runner/weir/wire"
)

// fakeWorkers starts fake SDK workers; the first crashes of them crash on
// their first bundle.
type fakeWorkers struct {
	t       *testing.T
	srv     *fnapi.Server
	crashes int
	// fake, when set, configures the n-th worker started (from 1).
	fake func(n int) *fnapitest.Worker

	mu      sync.Mutex
	started int
	cur     *fnapi.Worker
}

func (f *fakeWorkers) start() (*fnapi.Worker, error) {
	f.started++
	id := fmt.Sprint("w", f.started)
	w := f.srv.ExpectWorker(id, "env")
	fake := &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, CrashOnBundle: f.started <= f.crashes}
	if f.fake != nil {
		fake = f.fake(f.started)
	}
	if err := fake.Start(f.srv.Endpoint(), id); err != nil {
		return nil, err
	}
	f.t.Cleanup(fake.Stop)
	f.cur = w
	return w, nil
}

func (f *fakeWorkers) Worker(context.Context, string) (*fnapi.Worker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur != nil {
		return f.cur, nil
	}
	return f.start()
}

func (f *fakeWorkers) Replace(_ context.Context, _ string, lost *fnapi.Worker) (*fnapi.Worker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.start()
}

// elemSource emits n one-byte-value elements in the global window.
type elemSource struct{ n int }

func (s elemSource) Run(ctx context.Context, out *Output, _ *Injector) error {
	if err := s.emit(ctx, out); err != nil {
		return err
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

func (s elemSource) emit(ctx context.Context, out *Output) error {
	var batch [][]byte
	for i := range s.n {
		batch = append(batch, wire.AppendWindowedValue(nil, mtime.Time(i), nil, []byte{wire.PaneNoFiring}, []byte{1, byte(i)}))
	}
	return out.Emit(ctx, 0, batch)
}

type collect struct {
	mu  *sync.Mutex
	got *[][]byte
}

func (c collect) Process(_ context.Context, _ int, elems [][]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.got = append(*c.got, elems...)
	return nil
}
func (collect) Watermark(context.Context, int, mtime.Time) error { return nil }
func (collect) Barrier(context.Context, BarrierID) error         { return nil }
func (collect) Finish(context.Context) error                     { return nil }

// runStage runs n elements through an SDK stage whose first crashes
// workers crash; it returns what came out, the stage's warnings and the
// graph's error.
func runStage(t *testing.T, crashes, n int) ([][]byte, []string, error) {
	srv, err := fnapi.NewServer(fnapi.Options{JobID: "job"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	bytesM := func(b []byte) (int, error) {
		if len(b) < 2 {
			return 0, wire.ErrShort
		}
		return 2, nil
	}
	codec := wire.NewCodec(func([]byte) (int, error) { return 0, nil }, bytesM)
	spec := &SDKStageSpec{Name: "stage", Env: "env", DescriptorID: "d", Source: "src",
		Sinks: []string{"sink"}, SinkCodecs: []*wire.Codec{codec},
		Workers: &fakeWorkers{t: t, srv: srv, crashes: crashes}, MaxElems: 10}
	var mu sync.Mutex
	var got [][]byte
	var warns []string
	spec.Warn = func(m string) { mu.Lock(); warns = append(warns, m); mu.Unlock() }
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return elemSource{n}, nil }},
		{Name: "sdk", Parallelism: 1, Outputs: 1, Inputs: []NodeInput{{From: 0}},
			New: func(_ int, out *Output) (Operator, error) { return NewSDKStage(spec, out), nil }},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 1}},
			New: func(int, *Output) (Operator, error) { return collect{&mu, &got}, nil }},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = g.Run(ctx, nil)
	mu.Lock()
	defer mu.Unlock()
	return got, warns, err
}

// TestLostWorkerBundleRetried: bundles keep their input until their
// response arrives, so a worker that crashes mid-bundle costs a retry on a
// new worker and loses nothing; each retry is a warning.
func TestLostWorkerBundleRetried(t *testing.T) {
	got, warns, err := runStage(t, 2, 25)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 25 {
		t.Fatalf("got %d elements, want 25", len(got))
	}
	seen := map[byte]bool{}
	for _, e := range got {
		seen[e[len(e)-1]] = true
	}
	if len(seen) != 25 {
		t.Errorf("got %d distinct elements, want 25", len(seen))
	}
	if len(warns) != 2 || !strings.Contains(warns[0], "stage stage: bundle lost with its worker") ||
		!strings.Contains(warns[0], "retry 1 of 3") || !strings.Contains(warns[1], "retry 2 of 3") {
		t.Errorf("warnings %q, want one per retry", warns)
	}
}

// TestLostWorkerRetriesBounded: past the retry limit the job fails, and the
// error carries the worker's last log lines.
func TestLostWorkerRetriesBounded(t *testing.T) {
	_, _, err := runStage(t, 100, 5)
	if err == nil {
		t.Fatal("stage succeeded with workers that always crash")
	}
	for _, want := range []string{"failed 4 times", "fake worker", "worker lost"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// trickleSource emits n elements and then, without moving the watermark,
// waits until they have come out of the stage (seen is closed) before it
// ends.
type trickleSource struct {
	n    int
	seen <-chan struct{}
}

func (s trickleSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	if err := (elemSource{s.n}).emit(ctx, out); err != nil {
		return err
	}
	select {
	case <-s.seen:
	case <-ctx.Done():
		return fmt.Errorf("the %d elements stayed in the stage's open bundle: %w", s.n, ctx.Err())
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

// TestOpenBundleClosesInTime: elements that arrive while the watermark
// stands still, too few to fill a bundle, come out once MaxBundleTime has
// passed, not only at the next watermark or barrier.
func TestOpenBundleClosesInTime(t *testing.T) {
	srv, err := fnapi.NewServer(fnapi.Options{JobID: "job"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	codec := wire.NewCodec(func([]byte) (int, error) { return 0, nil }, func(b []byte) (int, error) {
		if len(b) < 2 {
			return 0, wire.ErrShort
		}
		return 2, nil
	})
	spec := &SDKStageSpec{Name: "stage", Env: "env", DescriptorID: "d", Source: "src",
		Sinks: []string{"sink"}, SinkCodecs: []*wire.Codec{codec},
		Workers: &fakeWorkers{t: t, srv: srv}, MaxElems: 1000, MaxBundleTime: 20 * time.Millisecond}
	seen := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var got [][]byte
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return trickleSource{3, seen}, nil }},
		{Name: "sdk", Parallelism: 1, Outputs: 1, Inputs: []NodeInput{{From: 0}},
			New: func(_ int, out *Output) (Operator, error) { return NewSDKStage(spec, out), nil }},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 1}},
			New: func(int, *Output) (Operator, error) {
				return notify{collect{&mu, &got}, func() {
					if len(got) >= 3 {
						once.Do(func() { close(seen) })
					}
				}}, nil
			}},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("%d elements came out, want 3", len(got))
	}
}

// notify is a collect that calls after under its lock once it has taken
// a batch.
type notify struct {
	collect
	after func()
}

func (n notify) Process(ctx context.Context, port int, elems [][]byte) error {
	if err := n.collect.Process(ctx, port, elems); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.after()
	return nil
}
