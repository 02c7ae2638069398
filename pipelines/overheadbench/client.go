package main

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
)

// runClient submits one job of -test to -job-endpoint with a LOOPBACK
// worker in this process, waits for it, and checks its counters.
func runClient(ctx context.Context) error {
	*jobopts.Endpoint = *endpoint
	*jobopts.EnvironmentType = "LOOPBACK"
	beam.Init()
	p, want, err := build(*test, *n, *keys)
	if err != nil {
		return err
	}
	pr, err := beam.Run(ctx, "universal", p)
	if err != nil {
		return fmt.Errorf("%s: %w", *test, err)
	}
	got := map[string]int64{}
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Namespace() == ns {
			got[c.Name()] += c.Result()
		}
	}
	for name, w := range want {
		if got[name] != w {
			return fmt.Errorf("%s: counter %s is %d, want %d (all: %v)", *test, name, got[name], w, got)
		}
	}
	return nil
}
