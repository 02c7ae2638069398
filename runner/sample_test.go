package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	weirstate "github.com/weir-runner/weir/state"
)

// executeSampling runs p in-process and, while it runs and once more after
// it ended, calls sample every interval with the stores of the jobs it
// started. A store closes when its job ends, so sample must treat a failed
// read as no sample. The job's error fails the test.
func executeSampling(t *testing.T, p *beam.Pipeline, timeout, every time.Duration, sample func([]*weirstate.Store)) {
	t.Helper()
	var mu sync.Mutex
	var stores []*weirstate.Store
	testHookStore = func(s *weirstate.Store) { mu.Lock(); stores = append(stores, s); mu.Unlock() }
	defer func() { testHookStore = nil }()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-time.After(every):
		}
		mu.Lock()
		sample(stores)
		mu.Unlock()
	}
}
