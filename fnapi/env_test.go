package fnapi_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/fnapi"
)

// TestWorkerThatNeverConnects: a worker weir starts that never opens its
// control stream (a worker pool whose workers cannot import the SDK) fails
// its bundles with ErrNotConnected naming the worker and environment,
// rather than leaving the job waiting, and is not a lost worker to retry.
func TestWorkerThatNeverConnects(t *testing.T) {
	script := filepath.Join(t.TempDir(), "silent-worker")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := fnapi.NewServer(fnapi.Options{JobID: "job", ConnectTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	payload, _ := proto.Marshal(&pipepb.ProcessPayload{Command: script})
	w, stop, err := srv.StartWorker(ctx(t), "py", &pipepb.Environment{Urn: fnapi.URNEnvProcess, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, err = w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
		Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{{1}}}}, Outputs: []string{"sink"}})
	if !errors.Is(err, fnapi.ErrNotConnected) || errors.Is(err, fnapi.ErrWorkerLost) {
		t.Fatalf("Process = %v, want ErrNotConnected and not ErrWorkerLost", err)
	}
	if !strings.Contains(err.Error(), "PROCESS environment py") || !strings.Contains(err.Error(), script) {
		t.Errorf("error %q does not name the environment and its command", err)
	}
}

// TestLostProcessWorkerIsKilled: a PROCESS worker the runner loses while
// its process runs on (here it never connects; a broken data stream is
// another way) is killed, not left beside its replacement until the job
// ends.
func TestLostProcessWorkerIsKilled(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "silent-worker")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := fnapi.NewServer(fnapi.Options{JobID: "job", ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	payload, _ := proto.Marshal(&pipepb.ProcessPayload{Command: script})
	w, stop, err := srv.StartWorker(ctx(t), "py", &pipepb.Environment{Urn: fnapi.URNEnvProcess, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// The script has a second to write its pid before it counts as never
	// connected.
	<-w.Done()
	var pid int
	for {
		b, err := os.ReadFile(pidFile)
		if _, serr := fmt.Sscan(string(b), &pid); err == nil && serr == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Gone once killed and reaped; a hang here is the bug (go test's
	// timeout ends it).
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(time.Millisecond)
	}
}
