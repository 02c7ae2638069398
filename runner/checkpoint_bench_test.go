package runner

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/state"
)

var (
	ckBench       = flag.Bool("ckbench", false, "run the checkpoint backpressure benchmark (make bench-checkpoint)")
	ckBenchDepths = flag.String("ckbench_depths", "4,16,64,128", "inbox sizes (messages) to run, comma-separated")
	ckBenchN      = flag.Int("ckbench_checkpoints", 10, "completed checkpoints to measure per run")
	ckBenchModes  = flag.String("ckbench_modes", "aligned,unaligned,aligned-timeout", "checkpoint modes to run, comma-separated")
	ckBenchRows   = flag.Bool("ckbench_rows", false, "log every checkpoint's statistics")
	ckBenchDelay  = flag.Duration("ckbench_batch_delay", 4*time.Millisecond, "time the slow stage spends on each batch")
)

const (
	ckBenchBatch = 128 // elements per batch
	ckBenchElem  = 64  // bytes per element
	ckBenchKeys  = 64  // keys the slow stage counts
)

// ckSource emits batches as fast as the slow stage lets it, polling for
// barriers between them, until stop.
type ckSource struct{ stop *atomic.Bool }

func (s ckSource) Run(ctx context.Context, out *executor.Output, inj *executor.Injector) error {
	var n uint64
	for !s.stop.Load() {
		batch := make([][]byte, ckBenchBatch)
		for i := range batch {
			e := make([]byte, ckBenchElem)
			binary.BigEndian.PutUint64(e, n)
			n++
			batch[i] = e
		}
		if err := out.Emit(ctx, 0, batch); err != nil {
			return err
		}
		if _, err := inj.Poll(); err != nil {
			return err
		}
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

// ckSlow is the deliberately slow stage: each batch takes delay, then it
// counts its elements per key in the store (one transaction per batch) and
// passes them on.
type ckSlow struct {
	out    *executor.Output
	us     *state.UserState
	delay  time.Duration
	counts [ckBenchKeys]uint64
}

func (s *ckSlow) Process(ctx context.Context, _ int, elems [][]byte) error {
	time.Sleep(s.delay)
	txn := s.us.Begin()
	touched := map[int]bool{}
	for _, e := range elems {
		k := int(binary.BigEndian.Uint64(e) % ckBenchKeys)
		s.counts[k]++
		touched[k] = true
	}
	for k := range touched {
		c := state.Cell{KeyGroup: k, Key: []byte{byte(k)}, Transform: "count", StateID: "n"}
		if err := txn.BagClear(c); err != nil {
			txn.Abort()
			return err
		}
		if err := txn.BagAppend(c, mtime.MaxTimestamp, binary.BigEndian.AppendUint64(nil, s.counts[k])); err != nil {
			txn.Abort()
			return err
		}
	}
	if err := txn.Commit(); err != nil {
		return err
	}
	return s.out.Emit(ctx, 0, elems)
}
func (s *ckSlow) Watermark(ctx context.Context, _ int, wm mtime.Time) error {
	return s.out.Watermark(ctx, wm)
}
func (s *ckSlow) Barrier(context.Context, executor.BarrierID) error { return nil }
func (s *ckSlow) Finish(context.Context) error                      { return nil }

type ckSink struct{}

func (ckSink) Process(context.Context, int, [][]byte) error      { return nil }
func (ckSink) Watermark(context.Context, int, mtime.Time) error  { return nil }
func (ckSink) Barrier(context.Context, executor.BarrierID) error { return nil }
func (ckSink) Finish(context.Context) error                      { return nil }

// ckBenchResult is one row of the benchmark's table.
type ckBenchResult struct {
	mode            string
	depth           int
	durations       []time.Duration
	inFlight, bytes []int64
	failed          int64
}

// runCkBench runs source → slow stage → sink with the given inbox size
// and checkpoint mode until n checkpoints completed, through the runner's
// checkpoint machinery (coordinator, storage, store snapshots, in-flight
// files), and returns their statistics.
func runCkBench(t *testing.T, mode string, depth, n int) ckBenchResult {
	t.Helper()
	opts := map[string]any{CheckpointIntervalOption: "300ms", CheckpointModeOption: mode,
		CheckpointDirOption: t.TempDir(), CheckpointKeepOption: "2", CheckpointTimeoutOption: "1m"}
	if mode == "aligned-timeout" {
		opts[CheckpointAlignedTimeoutOption] = "20ms"
	}
	st, err := structpb.NewStruct(opts)
	if err != nil {
		t.Fatal(err)
	}
	j := NewJob(JobID(fmt.Sprintf("ckbench-%s-%d", mode, depth)), "ckbench", nil, st)
	cfg, err := checkpointOptions(j, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(state.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var stop atomic.Bool
	g := &executor.Graph{InboxSize: depth, Nodes: []*executor.Node{
		{Name: "source", Parallelism: 1, Outputs: 1,
			NewSource: func(int, *executor.Output) (executor.Source, error) { return ckSource{&stop}, nil }},
		{Name: "slow", Parallelism: 1, Outputs: 1, Inputs: []executor.NodeInput{{Port: 0, From: 0}},
			New: func(_ int, out *executor.Output) (executor.Operator, error) {
				return &ckSlow{out: out, us: store.NewUserState("slow/0"), delay: *ckBenchDelay}, nil
			}},
		{Name: "sink", Parallelism: 1, Inputs: []executor.NodeInput{{Port: 0, From: 1}},
			New: func(int, *executor.Output) (executor.Operator, error) { return ckSink{}, nil }},
	}}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ck, err := startCheckpoints(j, cfg, g, store, func(node, _ int) []string {
		if node == 1 {
			return []string{"slow/0"}
		}
		return nil
	}, func(err error) { cancel(err) })
	if err != nil {
		t.Fatal(err)
	}
	g.Checkpoints = ck
	errc := make(chan error, 1)
	go func() { errc <- g.Run(ctx, ck.barriers) }()
	for completed(j) < int64(n) {
		select {
		case err := <-errc:
			t.Fatalf("%s depth %d: the job ended early: %v", mode, depth, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	r := report(j) // before the drain, whose last checkpoint may be cut short
	stop.Store(true)
	if err := <-errc; err != nil {
		t.Fatalf("%s depth %d: %v", mode, depth, err)
	}
	ck.close()
	res := ckBenchResult{mode: mode, depth: depth, failed: r.Failed}
	for _, row := range r.Checkpoints {
		if row.Status != checkpoint.Completed {
			continue
		}
		if *ckBenchRows {
			t.Logf("%s depth %d: %+v", mode, depth, row)
		}
		res.durations = append(res.durations, row.Duration)
		res.inFlight = append(res.inFlight, row.InFlightBytes)
		res.bytes = append(res.bytes, row.Bytes)
	}
	return res
}

func median[T int64 | time.Duration](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestCheckpointBackpressureBench measures checkpoint duration against
// queue depth behind a deliberately slow stage, aligned and unaligned
// (make bench-checkpoint). It prints a Markdown table.
func TestCheckpointBackpressureBench(t *testing.T) {
	if !*ckBench {
		t.Skip("the checkpoint benchmark runs with -ckbench (make bench-checkpoint)")
	}
	var depths []int
	for _, f := range strings.Split(*ckBenchDepths, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || d < 1 {
			t.Fatalf("bad depth %q", f)
		}
		depths = append(depths, d)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| mode | inbox (batches) | backlog (elements / bytes) | backlog drain time | checkpoints | duration median | duration max | in-flight bytes (median) | checkpoint size (median) |\n")
	fmt.Fprintf(&b, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, mode := range strings.Split(*ckBenchModes, ",") {
		for _, d := range depths {
			r := runCkBench(t, mode, d, *ckBenchN)
			name := mode
			if mode == "aligned-timeout" {
				name = "aligned-timeout (20ms)"
			}
			fmt.Fprintf(&b, "| %s | %d | %d / %d | %v | %d (%d failed) | %v | %v | %d | %d |\n", name, d,
				d*ckBenchBatch, d*ckBenchBatch*ckBenchElem, time.Duration(d)**ckBenchDelay, len(r.durations), r.failed,
				median(r.durations), slices.Max(r.durations), median(r.inFlight), median(r.bytes))
		}
	}
	t.Logf("slow stage: %v per batch of %d elements of %d bytes; interval 300ms\n%s", *ckBenchDelay, ckBenchBatch, ckBenchElem, b.String())
}
