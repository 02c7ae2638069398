package fnapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/fnapi/fnapitest"
)

func startFake(t *testing.T, fake *fnapitest.Worker) (*fnapi.Server, *fnapi.Worker) {
	t.Helper()
	srv, err := fnapi.NewServer(fnapi.Options{JobID: "job"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	w := srv.ExpectWorker("w1", "env")
	if err := fake.Start(srv.Endpoint(), "w1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Stop)
	return srv, w
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// TestProcessBatchesAndReturnsOutputs sends more than one data frame of
// input and several bundles at once, and checks every bundle gets exactly
// its own data back, its output arriving in as many frames.
func TestProcessBatchesAndReturnsOutputs(t *testing.T) {
	fake := &fnapitest.Worker{Echo: map[string]string{"src": "sink"}}
	_, w := startFake(t, fake)
	const bundles, elems = 4, 10000 // 10000 × 1 KiB spans three frames of up to 4 MiB
	var wg sync.WaitGroup
	errs := make(chan error, bundles)
	for b := range bundles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := make([][]byte, elems)
			var want []byte
			for i := range in {
				in[i] = bytes.Repeat([]byte{byte(b)}, 1024)
				want = append(want, in[i]...)
			}
			res, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
				Inputs: []fnapi.Input{{TransformID: "src", Elements: in}}, Outputs: []string{"sink"}})
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(res.Outputs["sink"].Bytes(), want) {
				errs <- fmt.Errorf("bundle %d: got %d bytes back, want %d of its own", b, len(res.Outputs["sink"].Bytes()), len(want))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := fake.LargestFrame(); n > 4<<20 || n < 1<<20 {
		t.Errorf("largest input frame %d bytes, want frames filled up to 4 MiB", n)
	}
}

func TestProcessFailsWithWorkerLostWhenWorkerCrashes(t *testing.T) {
	_, w := startFake(t, &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, CrashOnBundle: true})
	_, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
		Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{{1}}}}, Outputs: []string{"sink"}})
	if !errors.Is(err, fnapi.ErrWorkerLost) {
		t.Fatalf("Process = %v, want ErrWorkerLost", err)
	}
	if logs := w.LastLogs(); len(logs) == 0 {
		t.Error("the worker's log lines were not kept")
	}
}

func TestProcessReportsSDKFailure(t *testing.T) {
	_, w := startFake(t, &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, Fail: "user code panicked"})
	_, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
		Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{{1}}}}, Outputs: []string{"sink"}})
	var be *fnapi.BundleError
	if !errors.As(err, &be) || be.Message == "" {
		t.Fatalf("Process = %v, want a BundleError with the SDK's message", err)
	}
}

// An SDK that fails a bundle before it ever opens its data stream (it
// cannot build the descriptor) answers at once; the bundle fails with its
// message instead of waiting for a data stream that never comes.
func TestProcessReportsFailureBeforeData(t *testing.T) {
	_, w := startFake(t, &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, Fail: "no such coder", FailEarly: true})
	_, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
		Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{{1}}}}, Outputs: []string{"sink"}})
	var be *fnapi.BundleError
	if !errors.As(err, &be) || !strings.Contains(be.Message, "no such coder") {
		t.Fatalf("Process = %v, want a BundleError with the SDK's message", err)
	}
}
