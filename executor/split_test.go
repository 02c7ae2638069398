package executor

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/fnapi/fnapitest"
	"github.com/weir-runner/weir/wire"
)

// restrictionSource emits restrictions for a Restrictions fake worker.
type restrictionSource [][2]uint32

func (s restrictionSource) Run(ctx context.Context, out *Output, _ *Injector) error {
	var batch [][]byte
	for _, r := range s {
		batch = append(batch, fnapitest.Restriction(r[0], r[1]))
	}
	if err := out.Emit(ctx, 0, batch); err != nil {
		return err
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

// positions collects a Restrictions worker's output and, when the
// watermark passes, how much of it had arrived.
type positions struct {
	mu      sync.Mutex
	got     map[uint32]int
	n       int
	atWM    int
	wmSeen  bool
	bundles int
}

func (p *positions) Process(_ context.Context, _ int, elems [][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range elems {
		p.got[fnapitest.Position(e)]++
		p.n++
	}
	return nil
}

func (p *positions) Watermark(_ context.Context, _ int, wm mtime.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if wm >= mtime.MaxTimestamp && !p.wmSeen {
		p.wmSeen, p.atWM = true, p.n
	}
	return nil
}
func (*positions) Barrier(context.Context, BarrierID) error { return nil }
func (*positions) Finish(context.Context) error             { return nil }

// check wants every position below n exactly once, all before the final
// watermark.
func (p *positions) check(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		if c := p.got[uint32(i)]; c != 1 {
			t.Errorf("position %d came %d times", i, c)
		}
	}
	if p.n != n {
		t.Errorf("got %d outputs, want %d", p.n, n)
	}
	if !p.wmSeen || p.atWM != n {
		t.Errorf("the watermark passed after %d of %d outputs", p.atWM, n)
	}
}

func runSDFStage(t *testing.T, width int, src restrictionSource, fake func(n int) *fnapitest.Worker, opts ...func(*SDKStageSpec)) (*positions, error) {
	t.Helper()
	p := &positions{got: map[uint32]int{}}
	return p, runSDFStageTo(t, width, src, fake, p, p, opts...)
}

// runSDFStageTo is runSDFStage into sink, whose bundles p counts.
func runSDFStageTo(t *testing.T, width int, src restrictionSource, fake func(n int) *fnapitest.Worker, p *positions, sink Operator, opts ...func(*SDKStageSpec)) error {
	t.Helper()
	srv, err := fnapi.NewServer(fnapi.Options{JobID: "job"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	pos := wire.NewCodec(func([]byte) (int, error) { return 0, nil }, func(b []byte) (int, error) {
		if len(b) < 4 {
			return 0, wire.ErrShort
		}
		return 4, nil
	})
	spec := &SDKStageSpec{Name: "stage", Env: "env", DescriptorID: "d", Source: "src",
		Sinks: []string{"sink"}, SinkCodecs: []*wire.Codec{pos}, SDF: true, SplitBundles: width,
		Workers: &fakeWorkers{t: t, srv: srv, fake: fake},
		Metrics: func([]*pipepb.MonitoringInfo, bool) { p.bundles++ }}
	for _, o := range opts {
		o(spec)
	}
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return src, nil }},
		{Name: "sdk", Parallelism: 1, Outputs: 1, Inputs: []NodeInput{{From: 0}},
			New: func(_ int, out *Output) (Operator, error) { return NewSDKStage(spec, out), nil }},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 1}},
			New: func(int, *Output) (Operator, error) { return sink, nil }},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return g.Run(ctx, nil)
}

// sdfFake is how a test's Restrictions fake workers behave.
type sdfFake struct {
	pace            time.Duration
	stream          bool
	refuse          bool
	unnamed         bool // channel splits name no transform, as Java's do
	crashAfterSplit func(n int) bool
}

func restrictions(f sdfFake) func(int) *fnapitest.Worker {
	return func(n int) *fnapitest.Worker {
		return &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, Restrictions: true,
			Pace: f.pace, RefuseSplits: f.refuse, StreamOutput: f.stream, UnnamedChannelSplits: f.unnamed,
			CrashAfterSplit: f.crashAfterSplit != nil && f.crashAfterSplit(n)}
	}
}

// TestSplitResidualsRun: a long bundle is split, within its restriction
// and between its elements, and the residuals run as bundles of their own:
// every position comes out once, before the watermark passes. So too when
// the SDK's channel splits name no transform, as Beam Java's harness
// answers: weir asked about one channel, so they are about that one, and
// taken as "declined" they lost every element given up at a boundary.
func TestSplitResidualsRun(t *testing.T) {
	many := restrictionSource{{0, 50}, {50, 100}, {100, 150}, {150, 200}, {200, 250}, {250, 300}, {300, 350}, {350, 400}}
	for _, tc := range []struct {
		name    string
		src     restrictionSource
		unnamed bool
	}{
		{"one restriction", restrictionSource{{0, 400}}, false},
		{"many restrictions", many, false},
		{"one restriction, unnamed channel splits", restrictionSource{{0, 400}}, true},
		{"many restrictions, unnamed channel splits", many, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := runSDFStage(t, 3, tc.src, restrictions(sdfFake{pace: time.Millisecond, unnamed: tc.unnamed}))
			if err != nil {
				t.Fatal(err)
			}
			p.check(t, 400)
			if p.bundles < 2 {
				t.Errorf("ran %d bundles, want the first split into more", p.bundles)
			}
		})
	}
}

// TestSplitRefused: a bundle the SDK declines to split runs whole.
func TestSplitRefused(t *testing.T) {
	p, err := runSDFStage(t, 2, restrictionSource{{0, 300}},
		restrictions(sdfFake{pace: time.Millisecond, refuse: true}))
	if err != nil {
		t.Fatal(err)
	}
	p.check(t, 300)
	if p.bundles != 1 {
		t.Errorf("ran %d bundles, want 1", p.bundles)
	}
}

// TestSplitThenWorkerLost: a bundle lost after a split is retried on its
// primary alone, so the residual, run apart, comes out once.
func TestSplitThenWorkerLost(t *testing.T) {
	p, err := runSDFStage(t, 2, restrictionSource{{0, 300}}, restrictions(sdfFake{pace: time.Millisecond,
		crashAfterSplit: func(n int) bool { return n == 1 }}))
	if err != nil {
		t.Fatal(err)
	}
	p.check(t, 300)
}

// TestSplitOff: with SplitBundles 1 an SDF bundle runs whole.
func TestSplitOff(t *testing.T) {
	p, err := runSDFStage(t, 1, restrictionSource{{0, 200}}, restrictions(sdfFake{pace: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	p.check(t, 200)
	if p.bundles != 1 {
		t.Errorf("ran %d bundles, want 1", p.bundles)
	}
}

func TestApplySplit(t *testing.T) {
	in := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}
	root := func(s string) *fnpb.BundleApplication { return &fnpb.BundleApplication{Element: []byte(s)} }
	resid := func(s string) *fnpb.DelayedBundleApplication {
		return &fnpb.DelayedBundleApplication{Application: root(s)}
	}
	ch := func(pi, ri int64) []*fnpb.ProcessBundleSplitResponse_ChannelSplit {
		return []*fnpb.ProcessBundleSplitResponse_ChannelSplit{{TransformId: "src", LastPrimaryElement: pi, FirstResidualElement: ri}}
	}
	join := func(bs [][]byte) string {
		var s []string
		for _, b := range bs {
			s = append(s, string(b))
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		name              string
		splits            []*fnpb.ProcessBundleSplitResponse
		residual, primary string
		err, unsure       bool
	}{
		{name: "channel", splits: []*fnpb.ProcessBundleSplitResponse{{ChannelSplits: ch(1, 2)}},
			residual: "c,d", primary: "a,b"},
		{name: "within an element", splits: []*fnpb.ProcessBundleSplitResponse{{ChannelSplits: ch(0, 2),
			PrimaryRoots: []*fnpb.BundleApplication{root("b1")}, ResidualRoots: []*fnpb.DelayedBundleApplication{resid("b2")}}},
			residual: "b2,c,d", primary: "a,b1"},
		{name: "twice within an element", splits: []*fnpb.ProcessBundleSplitResponse{
			{ChannelSplits: ch(0, 2), PrimaryRoots: []*fnpb.BundleApplication{root("b1")}, ResidualRoots: []*fnpb.DelayedBundleApplication{resid("b2")}},
			{ChannelSplits: ch(0, 2), PrimaryRoots: []*fnpb.BundleApplication{root("b11")}, ResidualRoots: []*fnpb.DelayedBundleApplication{resid("b12")}}},
			residual: "b12", primary: "a,b11"},
		{name: "after the element split within", splits: []*fnpb.ProcessBundleSplitResponse{
			{ChannelSplits: ch(0, 2), PrimaryRoots: []*fnpb.BundleApplication{root("b1")}, ResidualRoots: []*fnpb.DelayedBundleApplication{resid("b2")}},
			{ChannelSplits: ch(1, 2)}},
			residual: "", primary: "a,b1"},
		{name: "no channel split", splits: []*fnpb.ProcessBundleSplitResponse{{
			PrimaryRoots: []*fnpb.BundleApplication{root("b1")}, ResidualRoots: []*fnpb.DelayedBundleApplication{resid("b2")}}},
			residual: "b2", primary: "a,b,c,d", unsure: true},
		{name: "gap", splits: []*fnpb.ProcessBundleSplitResponse{{ChannelSplits: ch(0, 2)}}, err: true},
		{name: "backwards", splits: []*fnpb.ProcessBundleSplitResponse{{ChannelSplits: ch(2, 1)}}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := newSDFTask(in)
			var res []string
			for _, sp := range tc.splits {
				r, err := task.applySplit("src", sp)
				if tc.err {
					if err == nil {
						t.Fatal("malformed split accepted")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				res = append(res, join(r))
			}
			if got := res[len(res)-1]; got != tc.residual {
				t.Errorf("residual %q, want %q", got, tc.residual)
			}
			if got := join(task.primary()); got != tc.primary {
				t.Errorf("primary %q, want %q", got, tc.primary)
			}
			if task.unsure != tc.unsure {
				t.Errorf("unsure %v, want %v", task.unsure, tc.unsure)
			}
		})
	}
}

// TestRunawayBundleReported: an SDF bundle that runs on without finishing
// or checkpointing is reported to the job by stage, with its progress.
func TestRunawayBundleReported(t *testing.T) {
	var mu sync.Mutex
	var warnings []string
	p, err := runSDFStage(t, 2, restrictionSource{{0, 300}},
		restrictions(sdfFake{pace: time.Millisecond, refuse: true}),
		func(s *SDKStageSpec) {
			s.RunawayAfter = 50 * time.Millisecond
			s.Warn = func(m string) { mu.Lock(); warnings = append(warnings, m); mu.Unlock() }
		})
	if err != nil {
		t.Fatal(err)
	}
	p.check(t, 300)
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) == 0 {
		t.Fatal("a bundle ran 6 times RunawayAfter and no warning came")
	}
	if w := warnings[0]; !strings.Contains(w, "stage stage:") || !strings.Contains(w, "without finishing") || !strings.Contains(w, "progress:") {
		t.Errorf("warning %q does not name the stage and give progress", w)
	}
}

// TestLargeBundlesCheckpointed: an SDF bundle whose output grows past
// MaxBundleOutput is checkpointed, so its output is committed in pieces
// rather than held whole; every position still comes out once.
func TestLargeBundlesCheckpointed(t *testing.T) {
	if streamAll {
		// Streamed, the bound is on what waits for downstream, which
		// this test's keeps up with: TestStreamedBackpressure covers it.
		t.Skip("a buffered bundle's bound")
	}
	p, err := runSDFStage(t, 2, restrictionSource{{0, 400}},
		restrictions(sdfFake{pace: time.Millisecond, stream: true}),
		func(s *SDKStageSpec) { s.MaxBundleOutput = 200 }) // 50 positions
	if err != nil {
		t.Fatal(err)
	}
	p.check(t, 400)
	if p.bundles < 4 {
		t.Errorf("ran %d bundles for 1600 bytes of output at 200 bytes a bundle, want several", p.bundles)
	}
}
