package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/fnapi/fnapitest"
	"github.com/weir-runner/weir/wire"
)

// twoByteCodec measures the elements of elemSource: a header in the
// global window and a two-byte value.
var twoByteCodec = wire.NewCodec(func([]byte) (int, error) { return 0, nil }, func(b []byte) (int, error) {
	if len(b) < 2 {
		return 0, wire.ErrShort
	}
	return 2, nil
})

// streamGraph runs elemSource{n} through a streamed SDK stage, on fake
// workers fake(1), fake(2)... into sink.
func streamGraph(t *testing.T, n int, fake func(int) *fnapitest.Worker, sink Operator) (*fakeWorkers, []string, error) {
	t.Helper()
	return sdkGraph(t, n, fake, sink, true)
}

// sdkGraph is streamGraph with the stage's output streamed or buffered.
func sdkGraph(t *testing.T, n int, fake func(int) *fnapitest.Worker, sink Operator, stream bool) (*fakeWorkers, []string, error) {
	t.Helper()
	srv, err := fnapi.NewServer(fnapi.Options{JobID: "job"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	workers := &fakeWorkers{t: t, srv: srv, fake: fake}
	var mu sync.Mutex
	var warns []string
	spec := &SDKStageSpec{Name: "stage", Env: "env", DescriptorID: "d", Source: "src",
		Sinks: []string{"sink"}, SinkCodecs: []*wire.Codec{twoByteCodec}, Workers: workers,
		MaxElems: n, StreamOutput: stream,
		Warn: func(m string) { mu.Lock(); warns = append(warns, m); mu.Unlock() }}
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return elemSource{n}, nil }},
		{Name: "sdk", Parallelism: 1, Outputs: 1, Inputs: []NodeInput{{From: 0}},
			New: func(_ int, out *Output) (Operator, error) { return NewSDKStage(spec, out), nil }},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 1}},
			New: func(int, *Output) (Operator, error) { return sink, nil }},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = g.Run(ctx, nil)
	mu.Lock()
	defer mu.Unlock()
	return workers, warns, err
}

// echoFrames is a Produce hook that sends the bundle's input back in
// frames of size bytes, whatever the elements' bounds.
func echoFrames(size int) func(fnapitest.BundleIn, func(string, []byte), func()) {
	return func(in fnapitest.BundleIn, emit func(string, []byte), _ func()) {
		for b := in.Data["src"]; len(b) > 0; {
			k := min(size, len(b))
			emit("sink", b[:k])
			b = b[k:]
		}
	}
}

// TestStreamedOutputSeenBeforeBundleEnds: the fake DoFn emits its first
// element, then waits until that element has reached the stage
// downstream before it emits the rest and ends the bundle. Buffered, the
// element would wait for the bundle's end, and the bundle for it.
func TestStreamedOutputSeenBeforeBundleEnds(t *testing.T) {
	const n = 20
	seen := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var got [][]byte
	sink := notify{collect{&mu, &got}, func() { once.Do(func() { close(seen) }) }}
	fake := func(int) *fnapitest.Worker {
		return &fnapitest.Worker{Echo: map[string]string{"src": "sink"},
			Produce: func(in fnapitest.BundleIn, emit func(string, []byte), _ func()) {
				data := in.Data["src"]
				first := len(data) / n
				emit("sink", data[:first])
				<-seen
				emit("sink", data[first:])
			}}
	}
	if _, _, err := streamGraph(t, n, fake, sink); err != nil {
		t.Fatal(err)
	}
	checkElems(t, got, n)
}

// checkElems wants elemSource{n}'s elements, each once.
func checkElems(t *testing.T, got [][]byte, n int) {
	t.Helper()
	count := map[byte]int{}
	for _, e := range got {
		count[e[len(e)-1]]++
	}
	for i := range n {
		if count[byte(i)] != 1 {
			t.Errorf("element %d came %d times", i, count[byte(i)])
		}
	}
	if len(got) != n {
		t.Errorf("got %d elements, want %d", len(got), n)
	}
}

// TestOutputCutAcrossFrames: the SDK may end a data frame inside an
// element; the stage still emits whole elements, each once, streamed or
// buffered (which cuts the frames as they came, not joined).
func TestOutputCutAcrossFrames(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, size := range []int{1, 5, 16, 17, 1000} {
			t.Run(fmt.Sprintf("stream=%v/%d", stream, size), func(t *testing.T) {
				const n = 40
				var mu sync.Mutex
				var got [][]byte
				fake := func(int) *fnapitest.Worker {
					return &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, Produce: echoFrames(size)}
				}
				if _, _, err := sdkGraph(t, n, fake, collect{&mu, &got}, stream); err != nil {
					t.Fatal(err)
				}
				checkElems(t, got, n)
			})
		}
	}
}

// TestComplete finishes an element cut off at the end of a frame from
// the next frame's first bytes.
func TestComplete(t *testing.T) {
	elem := wire.AppendWindowedValue(nil, 7, nil, []byte{wire.PaneNoFiring}, []byte{1, 2}) // 15 bytes
	for cut := 1; cut < len(elem); cut++ {
		next := append(bytes.Clone(elem[cut:]), 9, 9, 9)
		got, rest, err := complete(twoByteCodec, elem[:cut:cut], next)
		if err != nil || !bytes.Equal(got, elem) || !bytes.Equal(rest, []byte{9, 9, 9}) {
			t.Errorf("cut at %d: complete = %v, %v, %v; want the element and the 3 bytes after it", cut, got, rest, err)
		}
		// A next frame too short to finish it: all of it is kept.
		part, rest, err := complete(twoByteCodec, elem[:cut:cut], elem[cut:len(elem)-1])
		if err != nil || part != nil || !bytes.Equal(rest, elem[:len(elem)-1]) {
			t.Errorf("cut at %d, frame one byte short: complete = %v, %v, %v; want the bytes so far", cut, part, rest, err)
		}
	}
}

// TestOutputEndsInsideElement: a bundle whose output ends with part of
// an element fails the stage, naming it, streamed or buffered.
func TestOutputEndsInsideElement(t *testing.T) {
	for _, stream := range []bool{false, true} {
		var mu sync.Mutex
		var got [][]byte
		fake := func(int) *fnapitest.Worker {
			return &fnapitest.Worker{Echo: map[string]string{"src": "sink"},
				Produce: func(in fnapitest.BundleIn, emit func(string, []byte), _ func()) {
					emit("sink", in.Data["src"][:len(in.Data["src"])-1])
				}}
		}
		_, _, err := sdkGraph(t, 3, fake, collect{&mu, &got}, stream)
		if !errors.Is(err, wire.ErrShort) || !strings.Contains(err.Error(), "stage stage: output sink ends with") {
			t.Errorf("stream=%v: error %v, want one naming the stage's cut-off output", stream, err)
		}
	}
}

// TestStreamedLostBeforeOutputRetried: a bundle lost before any of its
// output went downstream is retried as a buffered one is, and nothing is
// lost or repeated.
func TestStreamedLostBeforeOutputRetried(t *testing.T) {
	const n = 10
	var mu sync.Mutex
	var got [][]byte
	fake := func(k int) *fnapitest.Worker {
		return &fnapitest.Worker{Echo: map[string]string{"src": "sink"},
			Produce: func(in fnapitest.BundleIn, emit func(string, []byte), crash func()) {
				if k == 1 {
					crash()
					return
				}
				echoFrames(7)(in, emit, crash)
			}}
	}
	workers, warns, err := streamGraph(t, n, fake, collect{&mu, &got})
	if err != nil {
		t.Fatal(err)
	}
	checkElems(t, got, n)
	if workers.started != 2 || len(warns) != 1 || !strings.Contains(warns[0], "retrying it") {
		t.Errorf("%d workers started, warnings %q; want one retry on a second worker", workers.started, warns)
	}
}

// TestStreamedLostAfterOutputNotRetried: a bundle lost once part of its
// output went downstream fails with ErrOutputLeft, and is not run again:
// downstream would see that part twice.
func TestStreamedLostAfterOutputNotRetried(t *testing.T) {
	const n = 10
	seen := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var got [][]byte
	sink := notify{collect{&mu, &got}, func() { once.Do(func() { close(seen) }) }}
	fake := func(int) *fnapitest.Worker {
		return &fnapitest.Worker{Echo: map[string]string{"src": "sink"},
			Produce: func(in fnapitest.BundleIn, emit func(string, []byte), crash func()) {
				emit("sink", in.Data["src"][:len(in.Data["src"])/n])
				<-seen
				crash()
			}}
	}
	workers, _, err := streamGraph(t, n, fake, sink)
	if !errors.Is(err, ErrOutputLeft) || !errors.Is(err, fnapi.ErrWorkerLost) {
		t.Fatalf("error %v, want ErrOutputLeft and ErrWorkerLost", err)
	}
	if !strings.Contains(err.Error(), "stage stage: bundle lost with its worker after 1 elements of its output went downstream") {
		t.Errorf("error %q does not say how much output left", err)
	}
	if workers.started != 1 || len(got) != 1 {
		t.Errorf("%d workers started, %d elements downstream; want the bundle not retried", workers.started, len(got))
	}
}

// TestStreamedSDF: an SDF stage's bundles stream, are split and
// checkpointed as buffered ones are, and every position comes out once,
// before the watermark passes.
func TestStreamedSDF(t *testing.T) {
	p, err := runSDFStage(t, 3, restrictionSource{{0, 400}},
		restrictions(sdfFake{pace: time.Millisecond, stream: true}),
		func(s *SDKStageSpec) { s.StreamOutput, s.MaxBundleOutput = true, 200 })
	if err != nil {
		t.Fatal(err)
	}
	p.check(t, 400)
}

// TestStreamedSDFLostAfterOutput: an SDF bundle lost after some of its
// output went downstream is not retried either.
func TestStreamedSDFLostAfterOutput(t *testing.T) {
	_, err := runSDFStage(t, 2, restrictionSource{{0, 300}}, restrictions(sdfFake{pace: time.Millisecond, stream: true,
		crashAfterSplit: func(n int) bool { return n == 1 }}),
		func(s *SDKStageSpec) { s.StreamOutput = true })
	if !errors.Is(err, ErrOutputLeft) {
		t.Fatalf("error %v, want ErrOutputLeft", err)
	}
}

// gated is a downstream stage that takes nothing until open is closed,
// then takes everything; it counts positions as positions does.
type gated struct {
	*positions
	open <-chan struct{}
}

func (g gated) Process(ctx context.Context, port int, elems [][]byte) error {
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.positions.Process(ctx, port, elems)
}

// TestStreamedBackpressure: downstream takes nothing while a fast SDF
// produces far more than MaxBundleOutput. Each running bundle is
// checkpointed once the output it holds passes the bound, though its
// output cannot leave, so the producer stops: the runner holds about
// SplitBundles times the bound, not the source's whole output. Then
// downstream opens and every position comes out once.
func TestStreamedBackpressure(t *testing.T) {
	const (
		n     = 400_000 // positions of 17 bytes: 6.8 MB in all
		width = 2
		bound = 16 << 10
		// What a bundle makes before its checkpoint lands: the fake SDK
		// produces as fast as it can while the split request travels,
		// about 100 KiB on an idle machine and up to 1.2 MB with the two
		// cores busy. The bound checked is still under a third of the
		// whole output.
		slack = 1 << 20
	)
	var produced, checkpoints atomic.Int64
	open, stalled := make(chan struct{}), make(chan struct{})
	var stallOnce sync.Once
	stall := func() { stallOnce.Do(func() { close(stalled) }) }
	fake := func(int) *fnapitest.Worker {
		return &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, Restrictions: true, StreamOutput: true,
			OnPosition: func(uint32) {
				if produced.Add(1) == n {
					stall() // all of it, unchecked: the test fails below
				}
			},
			OnSplit: func(fraction float64, split bool) {
				if fraction == 0 && split && checkpoints.Add(1) == width {
					stall()
				}
			}}
	}
	p := &positions{got: map[uint32]int{}}
	var workers *fakeWorkers
	var held int
	var made int64
	measured := make(chan struct{})
	go func() {
		defer close(measured)
		<-stalled
		workers.mu.Lock()
		w := workers.cur
		workers.mu.Unlock()
		held, made = w.Queued(), produced.Load()
		close(open)
	}()
	err := runSDFStageTo(t, width, restrictionSource{{0, n}}, fake, p, gated{p, open}, func(s *SDKStageSpec) {
		s.StreamOutput, s.MaxBundleOutput = true, bound
		workers = s.Workers.(*fakeWorkers)
	})
	<-measured
	if err != nil {
		t.Fatal(err)
	}
	p.check(t, n)
	if made >= n || held > width*(bound+slack) {
		t.Errorf("with downstream closed the SDK made %d of %d positions and the runner held %d bytes; want it stopped near %d bytes",
			made, n, held, width*bound)
	}
	t.Logf("downstream closed: %d positions made, %d bytes held", made, held)
}
