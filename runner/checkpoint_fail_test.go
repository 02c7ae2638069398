//go:build !race

// The Go SDK's harness races when the runner fails a job while a bundle
// runs (harness.go closes a channel a goroutine of its own may still send
// on), so this test of a job failing mid-bundle runs without the race
// detector; the coordinator's failure logic is tested with it in
// checkpoint/.

package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// TestCheckpointFailuresFailTheJob gives checkpoints no time to complete
// and tolerates one failure: the second expiry fails the job, with an
// error that says why.
func TestCheckpointFailuresFailTheJob(t *testing.T) {
	for k, v := range map[string]string{CheckpointIntervalOption: "20ms", CheckpointTimeoutOption: "1ns",
		CheckpointTolerableFailuresOption: "1", CheckpointDirOption: t.TempDir()} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, &endlessFn{}, beam.Impulse(s))
	_, err := Execute(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "too many consecutive checkpoint failures: 2 in a row, 1 tolerated") ||
		!strings.Contains(err.Error(), "expired after 1ns") {
		t.Fatalf("job error %v, want too many checkpoint failures", err)
	}
	t.Logf("the job failed: %v", err)
}
