package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

func positionKV(p int) ([]byte, []byte) { return []byte(fmt.Sprint("k", p%5)), []byte(strconv.Itoa(p)) }
func positionLine(p int) []byte         { return []byte(strconv.Itoa(p)) }

func init() {
	register.Function1x2(positionKV)
	register.Function1x1(positionLine)
}

// checkPositions reports what is wrong with the records a drained
// endlessFn job wrote: every position from 1 to drainEnd-1 exactly once,
// and nothing twice. Positions from drainEnd on are allowed once each:
// the runner may split the endless restriction (to keep a core busy), and
// the residual's first positions, half way to MaxInt64, can be claimed
// before the drain truncates it. Those are output too, and a sink must
// write them exactly once as well.
func checkPositions(got []string) error {
	seen := make(map[int64]int, len(got))
	for _, g := range got {
		p, err := strconv.ParseInt(g, 10, 64)
		if err != nil || p < 1 {
			return fmt.Errorf("record %q is not a position", g)
		}
		seen[p]++
	}
	var missing, twice []int64
	for p := int64(1); p < drainEnd; p++ {
		if seen[p] == 0 {
			missing = append(missing, p)
		}
	}
	for p, n := range seen {
		if n > 1 {
			twice = append(twice, p)
		}
	}
	if len(missing) > 0 || len(twice) > 0 {
		slices.Sort(twice)
		return fmt.Errorf("%d records: positions missing %v, more than once %v", len(got), missing, twice)
	}
	return nil
}

// runSinkJob runs endlessFn's positions into the sink sink adds, with
// checkpoints every 50 ms, until visible reports that some output is
// visible, then drains the job. It checks that the sink's state (its
// pending epochs) is in the checkpoints.
func runSinkJob(t *testing.T, sink func(s beam.Scope, positions beam.PCollection), visible func() bool) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{CheckpointIntervalOption: "50ms", CheckpointDirOption: dir, CheckpointKeepOption: "100"} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}
	defer sinkStateInCheckpoints(t, dir)
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	sink(s, beam.ParDo(s, &endlessFn{}, beam.Impulse(s)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()
	job := waitRunning(ctx, t)
	// Output appears while the job runs: commits follow checkpoints, not
	// only the end of the input.
	for !visible() {
		select {
		case err := <-done:
			t.Fatalf("the job ended before any output was committed: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if completed(job) < 1 {
		t.Errorf("output visible before any checkpoint completed")
	}
	if _, err := inProcessServer().Drain(ctx, &jobpb.DrainJobRequest{JobId: string(job.ID)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drained job: %v", err)
	}
}

// sinkStateInCheckpoints checks that some checkpoint in dir holds store
// records of the sink, the graph's last node.
func sinkStateInCheckpoints(t *testing.T, dir string) {
	t.Helper()
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := storage.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		c, err := storage.Verify(id)
		if err != nil {
			t.Fatalf("checkpoint %d: %v", id, err)
		}
		sink := 0
		for _, sm := range c.Manifest.Subtasks {
			sink = max(sink, sm.Node)
		}
		for _, sm := range c.Manifest.Subtasks {
			var meta subtaskMeta
			if err := json.Unmarshal(sm.Meta, &meta); err != nil {
				t.Fatal(err)
			}
			if sm.Node == sink && meta.Records > 0 {
				return
			}
		}
	}
	t.Errorf("none of %d checkpoints holds the sink's pending records", len(ids))
}

// readCommitted returns the values a read_committed consumer sees in
// topic (of partitions partitions), sorted. A sentinel appended to each
// partition outside any transaction marks the end, so no timeout is
// involved; an open transaction would hold it back.
func readCommitted(t *testing.T, c *kafkatest.Broker, topic string, partitions int32) []string {
	t.Helper()
	ctx := context.Background()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for part := range partitions {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte("sentinel")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for seen := 0; seen < int(partitions); {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "sentinel" {
				seen++
				return
			}
			out = append(out, string(r.Value))
		})
	}
	slices.Sort(out)
	return out
}

// TestExactlyOnceKafkaEndToEnd runs an unbounded job with checkpoints
// into an exactly-once Kafka write: records become visible to a
// read_committed consumer while the job runs, and after the drain it sees
// every record exactly once.
func TestExactlyOnceKafkaEndToEnd(t *testing.T) { kafkatest.Each(t, testExactlyOnceKafkaEndToEnd) }

func testExactlyOnceKafkaEndToEnd(t *testing.T, c *kafkatest.Broker) {
	out := c.Topic(t, "out", 2)
	cfg := kafkaio.WriteConfig{BootstrapServers: c.Addrs, Topic: out, Semantic: kafkaio.ExactlyOnce,
		TransactionalID: c.Name(t, "sink")}
	runSinkJob(t, func(s beam.Scope, positions beam.PCollection) {
		kafkaio.Write(s, cfg, beam.ParDo(s, positionKV, positions))
	}, func() bool {
		return len(readCommitted(t, c, out, 2)) > 0
	})
	if err := checkPositions(readCommitted(t, c, out, 2)); err != nil {
		t.Errorf("read_committed: %v", err)
	}
}

// TestExactlyOnceKafkaNeedsCheckpoints: an exactly-once write in a job
// without checkpoints is refused before it runs, saying what to set.
func TestExactlyOnceKafkaNeedsCheckpoints(t *testing.T) {
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	cfg := kafkaio.WriteConfig{BootstrapServers: []string{"localhost:1"}, Topic: "out", Semantic: kafkaio.ExactlyOnce}
	kafkaio.Write(s, cfg, beam.ParDo(s, positionKV, beam.Create(s, 1, 2)))
	_, err := Execute(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "needs checkpoints") || !strings.Contains(err.Error(), CheckpointIntervalOption) {
		t.Fatalf("Execute = %v, want a refusal naming --%s", err, CheckpointIntervalOption)
	}
}

// finalLines returns the lines of the committed (not hidden) files in dir,
// sorted, and how many temporary files are left.
func finalLines(t *testing.T, dir string) (lines []string, temps int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			temps++
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	slices.Sort(lines)
	return lines, temps
}

// TestFileSinkEndToEnd: the same job into fileio.Write. Files appear
// while the job runs; after the drain the committed files hold every
// record exactly once and no temporary file is left.
func TestFileSinkEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	runSinkJob(t, func(s beam.Scope, positions beam.PCollection) {
		fileio.Write(s, fileio.WriteConfig{Dir: dir, Suffix: ".txt"}, beam.ParDo(s, positionLine, positions))
	}, func() bool {
		lines, _ := finalLines(t, dir)
		return len(lines) > 0
	})
	lines, temps := finalLines(t, dir)
	if err := checkPositions(lines); err != nil || temps != 0 {
		t.Errorf("files: %v; %d temporary files left, want none", err, temps)
	}
}

// TestFileSinkWithoutCheckpoints: a bounded job without checkpoints
// renames its files when the input ends.
func TestFileSinkWithoutCheckpoints(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	fileio.Write(s, fileio.WriteConfig{Dir: dir, Prefix: "lines"}, beam.Create(s, []byte("x"), []byte("y"), []byte("z")))
	if _, err := Execute(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	lines, temps := finalLines(t, dir)
	if !slices.Equal(lines, []string{"x", "y", "z"}) || temps != 0 {
		t.Errorf("files hold %q and %d temporary files, want x, y, z and none", lines, temps)
	}
}
