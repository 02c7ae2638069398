package main

import (
	"context"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/test/integration/wordcount"

	"github.com/weir-runner/weir/runner"
)

// TestBeamWordCountInProcess runs Beam's own integration wordcount pipeline
// in-process on weir (what --runner=weir does) and lets its passert check
// the hash of the formatted counts; then checks its user metrics.
func TestBeamWordCountInProcess(t *testing.T) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	lines := beam.CreateList(s, []string{"bar bar foo bar foo foo"})
	wordcount.WordCountFromPCol(s, lines, "Nz70m/sn3Ep9o484r7MalQ==", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.Execute(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	q := res.Metrics().Query(func(r beam.MetricResult) bool { return r.Name() == "smallWords" })
	if c := q.Counters(); len(c) != 1 || c[0].Committed != 6 {
		t.Errorf("smallWords counters %+v, want 6", c)
	}
}
