package runner

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

func kafkaValueInt(_, v []byte) int64 { n, _ := strconv.ParseInt(string(v), 10, 64); return n }

func init() { register.Function2x1(kafkaValueInt) }

func peekCollected(run string) []string {
	collected.Lock()
	defer collected.Unlock()
	return slices.Clone(collected.runs[run])
}

// TestRestoreKafkaAfterCrash reads a two-partition topic into 10 s
// windows summed, cancels the job (no drain: as a crash) once windows 0-2
// are out and two more checkpoints completed, produces the rest, and
// starts the job again under the same name and folder. The restored job
// reads on from the checkpoint's offsets: each window's sum is the
// expected one (the partial sum of window 3 comes from the restored
// state, and no record is read twice), every window is emitted, and the
// windows the first run closed are not emitted again.
//
// In unaligned mode, whatever data barriers overtook is re-injected on
// restore; the sums check it too (whether a run records any depends on
// timing: the test logs the in-flight bytes of the checkpoint restored).
func TestRestoreKafkaAfterCrash(t *testing.T) {
	for _, mode := range []string{"aligned", "unaligned"} {
		t.Run(mode, func(t *testing.T) {
			kafkatest.Each(t, func(t *testing.T, c *kafkatest.Broker) { restoreKafkaAfterCrash(t, c, mode) })
		})
	}
}

func restoreKafkaAfterCrash(t *testing.T, c *kafkatest.Broker, mode string) {
	events := c.Topic(t, "events", 2)
	run := c.Kind + "-" + mode // names the collected outputs and the job
	const windows, perWindow = 6, 4
	base := time.UnixMilli(1_700_000_000_000) // on a 10 s boundary
	want := map[string][]string{}
	var batchA, batchB []*kgo.Record
	for w := range windows {
		sum := 0
		for i := range perWindow {
			v := (w + 1) * (i + 1) * 10
			sum += v
			rec := &kgo.Record{Topic: events, Partition: int32(i % 2), Value: []byte(strconv.Itoa(v)),
				Timestamp: base.Add(time.Duration(w*10+i) * time.Second)}
			// Window 3 is split: half before the crash, half after.
			if w < 3 || w == 3 && i < 2 {
				batchA = append(batchA, rec)
			} else {
				batchB = append(batchB, rec)
			}
		}
		end := base.Add(time.Duration(w+1)*10*time.Second).UnixMilli() - 1
		want[fmt.Sprint(end)] = []string{fmt.Sprint(sum)}
	}
	pcl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := pcl.ProduceSync(ctx, batchA...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	pipeline := func(run string) *beam.Pipeline {
		p, s := beam.NewPipelineWithRoot()
		in := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{events},
			MaxRecords: windows * perWindow})
		vals := beam.WindowInto(s, window.NewFixedWindows(10*time.Second), beam.ParDo(s, kafkaValueInt, in))
		beam.ParDo0(s, &collectFn{Run: run}, stats.Sum(s, vals))
		return p
	}
	opts := map[string]string{CheckpointIntervalOption: "5ms", CheckpointDirOption: dir, CheckpointKeepOption: "10",
		CheckpointModeOption: mode}
	for k, v := range opts {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	if err := flag.Set("job_name", "restore-kafka-"+run); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("job_name", "")
	beam.Init()

	// Opened before the job runs: opening removes unfinished checkpoint
	// folders, which would fail the job's checkpoint in flight.
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir, Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, pipeline("kafka-"+run+"-1")); done <- err }()
	job := waitRunning(ctx, t)
	var first checkpoint.ID
	for len(peekCollected("kafka-"+run+"-1")) < 3 {
		sleepOrFail(ctx, t, done)
	}
	if ids, _ := storage.List(); len(ids) > 0 {
		first = ids[0]
	}
	for {
		if ids, _ := storage.List(); len(ids) > 0 && ids[0] >= first+2 {
			break
		}
		sleepOrFail(ctx, t, done)
	}
	if _, err := inProcessServer().Cancel(ctx, &jobpb.CancelJobRequest{JobId: string(job.ID)}); err != nil {
		t.Fatal(err)
	}
	<-done
	firstRun := takeCollected("kafka-" + run + "-1")
	if c, _, err := storage.Latest(); err == nil && c.Manifest.Stats != nil {
		t.Logf("restoring checkpoint %d: %d in-flight bytes, %d unaligned subtasks", c.Manifest.Checkpoint,
			c.Manifest.Stats.InFlightBytes, c.Manifest.Stats.UnalignedSubtasks)
	}

	if err := pcl.ProduceSync(ctx, batchB...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(ctx, pipeline("kafka-"+run+"-2")); err != nil {
		t.Fatalf("restored run: %v", err)
	}
	second := takeCollected("kafka-" + run + "-2")
	t.Logf("first run %v, restored run %v", firstRun, second)

	got := windowSums(append(slices.Clone(firstRun), second...))
	for ts, sums := range got {
		for _, s := range sums {
			if w := want[ts]; len(w) != 1 || w[0] != s {
				t.Errorf("window ending %s summed to %s, want %v", ts, s, w)
			}
		}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Errorf("windows emitted %v, want %v", got, want)
	}
	again := windowSums(second)
	for _, l := range firstRun {
		ts, _, _ := strings.Cut(l, ":")
		if s := again[ts]; len(s) > 0 {
			t.Errorf("the restored run emitted window %s (%v) again: it read the topic from the start", ts, s)
		}
	}
}

// sleepOrFail waits a little, failing the test if the job ended.
func sleepOrFail(ctx context.Context, t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("the job ended early: %v", err)
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(5 * time.Millisecond):
	}
}
