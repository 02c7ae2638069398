package fnapi_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/fnapi/fnapitest"
)

// streamed collects what a bundle's Stream is handed.
type streamed struct {
	mu     sync.Mutex
	frames [][]byte
	sinks  []string
}

func (s *streamed) take(sink string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frames = append(s.frames, data)
	s.sinks = append(s.sinks, sink)
}

// TestStreamHandsOverWhileBundleRuns: the fake DoFn emits one frame and
// then waits until the caller's Stream has it; a Process that held output
// to the end of the bundle would never return.
func TestStreamHandsOverWhileBundleRuns(t *testing.T) {
	seen := make(chan struct{})
	fake := &fnapitest.Worker{Echo: map[string]string{"src": "sink"},
		Produce: func(in fnapitest.BundleIn, emit func(string, []byte), _ func()) {
			emit("sink", []byte("first"))
			<-seen
			emit("sink", in.Data["src"])
		}}
	_, w := startFake(t, fake)
	var got streamed
	res, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
		Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{[]byte("in")}}}, Outputs: []string{"sink"},
		Stream: func(sink string, data []byte) error {
			got.take(sink, data)
			if len(got.frames) == 1 {
				close(seen)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.frames) != 2 || string(got.frames[0]) != "first" || string(got.frames[1]) != "in" || got.sinks[0] != "sink" {
		t.Errorf("streamed %q to %q, want [first in] to sink", got.frames, got.sinks)
	}
	if len(res.Outputs["sink"].Bytes()) != 0 {
		t.Errorf("result holds %d output bytes of a streamed bundle, want none", len(res.Outputs["sink"].Bytes()))
	}
}

// TestStreamSlowConsumerHoldsUpOnlyItsBundle runs two bundles on one
// worker, whose output shares one data stream. The first one's consumer
// blocks; the second must still finish, and the first one's output waits
// in its queue, which Buffered counts.
func TestStreamSlowConsumerHoldsUpOnlyItsBundle(t *testing.T) {
	emitted := make(chan struct{}) // the first bundle sent all its output
	fake := &fnapitest.Worker{Echo: map[string]string{"src": "sink"},
		Produce: func(in fnapitest.BundleIn, emit func(string, []byte), _ func()) {
			for range 3 {
				emit("sink", in.Data["src"])
			}
			if len(in.Data["src"]) == 1000 {
				close(emitted)
			}
		}}
	_, w := startFake(t, fake)
	sent, blocked, release := make(chan string, 1), make(chan struct{}), make(chan struct{})
	slow := make(chan error, 1)
	go func() {
		first := true
		_, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
			Inputs:  []fnapi.Input{{TransformID: "src", Elements: [][]byte{bytes.Repeat([]byte{1}, 1000)}}},
			Outputs: []string{"sink"},
			OnSent:  func(inst string) { sent <- inst },
			Stream: func(string, []byte) error {
				if first {
					first = false
					close(blocked)
					<-release
				}
				return nil
			}})
		slow <- err
	}()
	inst := <-sent
	<-blocked
	<-emitted
	// The first bundle's frames were sent before any of the second's, on
	// the same stream: once the second bundle is done, they have arrived.
	var got streamed
	if _, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
		Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{[]byte("b")}}}, Outputs: []string{"sink"},
		Stream: func(sink string, data []byte) error { got.take(sink, data); return nil }}); err != nil {
		t.Fatal(err)
	}
	if len(got.frames) != 3 {
		t.Errorf("second bundle streamed %d frames, want 3", len(got.frames))
	}
	// All three wait, the one being handed over included.
	if n := w.Buffered(inst); n != 3000 {
		t.Errorf("Buffered = %d while the consumer blocks, want 3000", n)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if n := w.Buffered(inst); n != 0 {
		t.Errorf("Buffered = %d after the bundle, want 0", n)
	}
}

// TestStreamErrorEndsProcess: an error from Stream (downstream failed)
// is Process's error.
func TestStreamErrorEndsProcess(t *testing.T) {
	fake := &fnapitest.Worker{Echo: map[string]string{"src": "sink"},
		Produce: func(in fnapitest.BundleIn, emit func(string, []byte), _ func()) { emit("sink", []byte("x")) }}
	_, w := startFake(t, fake)
	boom := errors.New("downstream failed")
	_, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
		Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{[]byte("in")}}}, Outputs: []string{"sink"},
		Stream: func(string, []byte) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("Process: %v, want %v", err, boom)
	}
}

// TestStreamWorkerLostAfterOutput: a worker that dies after some output
// was handed over fails the bundle with ErrWorkerLost, so the caller
// knows it has output of a bundle that did not finish.
func TestStreamWorkerLostAfterOutput(t *testing.T) {
	seen := make(chan struct{})
	fake := &fnapitest.Worker{Echo: map[string]string{"src": "sink"},
		Produce: func(in fnapitest.BundleIn, emit func(string, []byte), crash func()) {
			emit("sink", []byte("first"))
			<-seen
			crash()
		}}
	_, w := startFake(t, fake)
	var got streamed
	_, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
		Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{[]byte("in")}}}, Outputs: []string{"sink"},
		Stream: func(sink string, data []byte) error {
			got.take(sink, data)
			close(seen)
			return nil
		}})
	if !errors.Is(err, fnapi.ErrWorkerLost) {
		t.Fatalf("Process: %v, want ErrWorkerLost", err)
	}
	if len(got.frames) != 1 {
		t.Errorf("streamed %d frames, want the one sent before the crash", len(got.frames))
	}
}
