package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/internal/contain"
)

// Runner-initiated splits of SDF bundles.
//
// An SDF stage's flush runs its input as one bundle, then, while fewer than
// SplitBundles bundles are in flight, asks the SDK to split the one that has
// gone longest unsplit in half; each residual runs as a bundle of its own on
// the same worker, concurrently. flush returns when every bundle and every
// residual has finished, so the stage's watermark waits for them all, and
// the goroutines that run bundles never outlive the call. Outputs, metrics
// and checkpoint residuals are handled on the calling goroutine, as bundles
// finish; streamed output (sdkstage_stream.go) is emitted by the goroutine
// of the bundle it belongs to, one bundle at a time (sdfRun.emitMu), so the
// calling goroutine stays free to checkpoint a bundle whose output waits
// while downstream is full.
//
// A split changes what the split bundle owns: retried after a lost worker,
// it runs its primary only (the elements before the split, and the primary
// roots of the element split within), never the residual again.

const (
	// splitAge is how long a bundle runs, from its start or its last
	// split, before it is split: short bundles are left whole.
	splitAge = 100 * time.Millisecond
	// maxSplitBackoff bounds the wait before asking again a bundle whose
	// SDK declined to split it.
	maxSplitBackoff = 2 * time.Second
)

func (s *SDKStage) splitBundles() int {
	if n := s.Spec.SplitBundles; n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// sdfTask is some of an SDF flush's input, run as one bundle at a time.
type sdfTask struct {
	in      [][]byte // the current attempt's input, as sent to the SDK
	end     int      // in[end:] was split off
	at      int      // index of the element split within, or -1
	roots   [][]byte // primary roots that replace in[at]
	unsure  bool     // a split left the primary unknown: no retry
	attempt int

	worker *fnapi.Worker
	// drainSplit is set while a checkpoint split for a drain is asked of
	// the running attempt.
	drainSplit bool
	// stopping says the running attempt accepted a split that keeps none
	// of its remainder: it ends at its next claim, and is not asked again.
	stopping bool
	// heldEnd, when above end, says in[end:heldEnd] was given up by a
	// checkpoint's channel split and waits for the attempt to end
	// (split_held.go).
	heldEnd int
	inst    string    // the running attempt's instruction, once sent
	started time.Time // when the running attempt's input was sent
	reports int       // runaway reports made of the running attempt
	since   time.Time // start or last split
	backoff time.Duration
	// use is how the running attempt runs the stage's precombines;
	// liftWatch says a precombining attempt's progress is watched
	// (liftsplit.go), liftStop that it is to stop early.
	use       liftUse
	liftWatch liftWatch
	liftStop  bool
	// out takes the running attempt's output when it streams.
	out *outStream
}

func newSDFTask(in [][]byte) *sdfTask { return &sdfTask{in: in, end: len(in), at: -1} }

// primary is what the task still owns.
func (t *sdfTask) primary() [][]byte {
	out := make([][]byte, 0, t.end+len(t.roots))
	for i, e := range t.in[:t.end] {
		if i == t.at {
			out = append(out, t.roots...)
			continue
		}
		out = append(out, e)
	}
	return out
}

// applySplit records a split of the task's bundle on input transform src
// and returns the residual, the input it gave up.
func (t *sdfTask) applySplit(src string, r *fnpb.ProcessBundleSplitResponse) ([][]byte, error) {
	var res [][]byte
	for _, rr := range r.GetResidualRoots() {
		res = append(res, rr.GetApplication().GetElement())
	}
	var cs *fnpb.ProcessBundleSplitResponse_ChannelSplit
	for _, c := range r.GetChannelSplits() {
		if c.GetTransformId() == src {
			cs = c
		}
	}
	if cs == nil {
		// The channel is unchanged; which element the primary roots
		// replace is not said.
		if len(r.GetPrimaryRoots()) > 0 || len(res) > 0 {
			t.unsure = true
		}
		return res, nil
	}
	pi, ri := cs.GetLastPrimaryElement(), cs.GetFirstResidualElement()
	if pi < -1 || ri <= pi || ri > pi+2 {
		return nil, fmt.Errorf("channel split %d/%d of %d elements is malformed", pi, ri, len(t.in))
	}
	if ri == pi+2 { // element pi+1 was split within
		if len(r.GetPrimaryRoots()) == 0 || len(res) == 0 {
			return nil, fmt.Errorf("channel split %d/%d leaves element %d neither primary nor residual", pi, ri, pi+1)
		}
		if t.at >= 0 && t.at != int(pi+1) {
			t.unsure = true
		}
		t.at = int(pi + 1)
		t.roots = nil
		for _, p := range r.GetPrimaryRoots() {
			t.roots = append(t.roots, p.GetElement())
		}
	}
	if int(ri) < t.end {
		res = append(res, t.in[ri:t.end]...)
		t.end = int(ri)
	}
	return res, nil
}

// retry makes the task's primary the input of its next attempt.
func (t *sdfTask) retry() {
	t.rerun()
	t.attempt++
}

// rerun makes the task's primary the input of another run.
func (t *sdfTask) rerun() {
	t.in = t.primary()
	t.end, t.at, t.roots = len(t.in), -1, nil
	t.inst, t.worker, t.backoff = "", nil, 0
}

type sdfEvent struct {
	task *sdfTask
	inst string // the attempt the event is about

	sent bool // the bundle's input is sent

	done bool // the bundle finished, with res or err
	res  *fnapi.BundleResult

	splitDone bool // a split was answered, with split or err
	split     *fnpb.ProcessBundleSplitResponse
	fraction  float64 // the split asked for

	progressDone bool // a progress report came, with progress or err
	progress     *fnpb.ProcessBundleProgressResponse

	err error

	// fatal, if set, fails the run: a panic in one of its goroutines.
	fatal error
}

// sdfRun is one flush of an SDF stage.
type sdfRun struct {
	s       *SDKStage
	ctx     context.Context
	width   int
	events  chan sdfEvent
	wg      sync.WaitGroup
	queue   []*sdfTask
	running map[*sdfTask]bool
	split   *sdfTask // the task a split request is out for
	// truncated is set when the input was truncated for a drain: it runs
	// to its end, uncut.
	truncated bool
	// emitMu serialises the emits of bundles that stream their output.
	emitMu sync.Mutex
	// over is signalled when a running bundle's output passes the limit
	// (overLimit).
	over chan struct{}
}

// runSplitting runs in as an SDF stage's flush, splitting bundles to keep
// up to SplitBundles of them in flight.
func (s *SDKStage) runSplitting(ctx context.Context, in [][]byte) error {
	ctx, cancel := context.WithCancel(ctx)
	r := &sdfRun{s: s, ctx: ctx, width: s.splitBundles(), events: make(chan sdfEvent),
		running: map[*sdfTask]bool{}, queue: []*sdfTask{newSDFTask(in)}, truncated: s.truncated,
		over: make(chan struct{}, 1)}
	defer r.wg.Wait()
	defer cancel()
	tick := time.NewTicker(splitAge / 2)
	defer tick.Stop()
	for len(r.queue) > 0 || len(r.running) > 0 || r.split != nil {
		for len(r.queue) > 0 && len(r.running) < r.width {
			if err := r.start(r.queue[0]); err != nil {
				return err
			}
			r.queue = r.queue[1:]
		}
		r.maybeSplit()
		r.watchPrecombining()
		r.reportRunaways()
		select {
		case ev := <-r.events:
			if err := r.handle(ev); err != nil {
				return err
			}
		case <-tick.C:
		case <-r.over:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// goContained runs f in a goroutine of the run; a panic in it (in the
// Fn API client or a hook) fails the run with the panic's stack instead of
// the process.
func (r *sdfRun) goContained(what string, f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := contain.Call(func() error {
			contain.AtCtx(contain.SDFHelper, r.ctx)
			f()
			return nil
		})
		if err != nil {
			r.send(sdfEvent{fatal: fmt.Errorf("stage %s: %s: %w", r.s.Spec.Name, what, err)})
		}
	}()
}

// send delivers an event unless the run is over.
func (r *sdfRun) send(ev sdfEvent) {
	select {
	case r.events <- ev:
	case <-r.ctx.Done():
	}
}

func (r *sdfRun) start(t *sdfTask) error {
	s := r.s
	if s.worker == nil {
		w, err := s.Spec.Workers.Worker(r.ctx, s.Spec.Env)
		if err != nil {
			return fmt.Errorf("stage %s: %w", s.Spec.Name, err)
		}
		s.worker = w
	}
	t.worker = s.worker
	r.running[t] = true
	stream := s.streams()
	desc, use := s.descriptor()
	t.use, t.liftWatch, t.liftStop, t.out = use, liftWatch{}, false, nil
	req := fnapi.BundleRequest{
		DescriptorID: desc,
		Inputs:       []fnapi.Input{{TransformID: s.Spec.Source, Elements: t.in}},
		Outputs:      s.Spec.Sinks,
		State:        s.state,
		OnSent:       func(inst string) { r.send(sdfEvent{task: t, inst: inst, sent: true}) },
		// Heard at once, not at the next tick: a fast SDF makes megabytes
		// in a tick.
		OutputLimit:   r.outputLimit(),
		OnOutputLimit: r.overLimit,
	}
	out := t.out
	if stream {
		out = s.newOutStream(r.ctx, s.Spec.Sinks, &r.emitMu)
		t.out, req.Stream = out, out.take
	}
	w := t.worker
	r.goContained("bundle", func() {
		began := time.Now()
		res, err := w.Process(r.ctx, req)
		if err == nil && out != nil {
			err = out.end()
		}
		if err == nil {
			s.Out.stats.bundle(time.Since(began))
		}
		inst := ""
		if res != nil {
			inst = res.Instruction
		}
		r.send(sdfEvent{task: t, inst: inst, done: true, res: res, err: err})
	})
	return nil
}

// maybeSplit asks for a split of the bundle that has gone longest unsplit,
// if a core would otherwise idle.
func (r *sdfRun) maybeSplit() {
	if r.split != nil {
		return
	}
	if r.s.draining() {
		if !r.truncated {
			r.checkpointForDrain()
		}
		return
	}
	if r.checkpointLarge() || r.stopPrecombining() {
		return
	}
	if len(r.queue) > 0 || len(r.running) >= r.width {
		return
	}
	var pick *sdfTask
	now := time.Now()
	for t := range r.running {
		if t.inst == "" || now.Sub(t.since) < splitAge+t.backoff {
			continue
		}
		if pick == nil || t.since.Before(pick.since) {
			pick = t
		}
	}
	if pick == nil {
		return
	}
	r.askSplit(pick, 0.5)
}

// askSplit asks t's running bundle to keep fraction of its remaining work;
// the answer comes back as an event. Fraction 0 is a checkpoint: the
// bundle stops at its next claim.
func (r *sdfRun) askSplit(t *sdfTask, fraction float64) {
	r.split = t
	req := fnapi.SplitRequest{Instruction: t.inst, TransformID: r.s.Spec.Source,
		Fraction: fraction, EstimatedElements: int64(len(t.in))}
	w, inst := t.worker, t.inst
	r.goContained("split", func() {
		sr, err := w.Split(r.ctx, req)
		r.send(sdfEvent{task: t, inst: inst, splitDone: true, split: sr, err: err, fraction: fraction})
	})
}

// runawayAfter is how long an SDF bundle runs before the job hears of it,
// and again after each as long.
const runawayAfter = time.Minute

// reportRunaways tells the job of bundles that have run for long without
// finishing, by transform, with what the SDK says of their progress: an SDF
// that neither finishes nor checkpoints holds its stage's watermark for as
// long as it runs.
func (r *sdfRun) reportRunaways() {
	s := r.s
	if s.Spec.Warn == nil {
		return
	}
	after := s.Spec.RunawayAfter
	if after <= 0 {
		after = runawayAfter
	}
	for t := range r.running {
		if t.inst == "" || time.Since(t.started) < time.Duration(t.reports+1)*after {
			continue
		}
		t.reports++
		w, inst, ran := t.worker, t.inst, time.Since(t.started).Round(time.Millisecond)
		r.goContained("progress report", func() {
			var progress string
			if resp, err := w.Progress(r.ctx, inst); err != nil {
				progress = err.Error()
			} else {
				progress = fnapi.DescribeProgress(resp.GetMonitoringInfos())
			}
			s.Spec.Warn(fmt.Sprintf("stage %s: a bundle has run for %v without finishing or checkpointing; progress: %s",
				s.Spec.Name, ran, progress))
		})
	}
}

// maxBundleOutput bounds the output an SDF bundle holds before it is
// checkpointed: a bundle's output waits in memory until it finishes, so an
// unsplit source would hold all it reads. Each of a source's concurrent
// bundles holds this much, a little more by the time its checkpoint
// lands, and its elements are then held until downstream has taken them:
// 32 MiB peaked at 420 MB in the job server of a 1M-record group-by-key,
// 16 MiB at 290 MB, with no change in wall time.
const maxBundleOutput = 16 << 20

// outputLimit is the output a bundle may hold before it is checkpointed.
func (r *sdfRun) outputLimit() int {
	if r.s.Spec.MaxBundleOutput > 0 {
		return r.s.Spec.MaxBundleOutput
	}
	return maxBundleOutput
}

// overLimit wakes the run's loop to checkpoint a bundle whose output has
// passed the limit. It runs on the data stream's receive loop: it never
// blocks.
func (r *sdfRun) overLimit() {
	select {
	case r.over <- struct{}{}:
	default:
	}
}

// checkpointLarge asks a bundle that has buffered more than maxBundleOutput
// to stop at its next claim; the rest runs as a bundle of its own. It
// reports whether it asked.
func (r *sdfRun) checkpointLarge() bool {
	limit := r.outputLimit()
	for t := range r.running {
		if t.inst == "" || t.stopping || t.worker.Buffered(t.inst) < limit {
			continue
		}
		r.askSplit(t, 0)
		return true
	}
	return false
}

// checkpointForDrain asks a running bundle that has not been asked yet to
// stop at its next claim (a split keeping none of the remainder), so a
// drain does not wait for an SDF that never checkpoints by itself.
func (r *sdfRun) checkpointForDrain() {
	for t := range r.running {
		if t.inst == "" || t.drainSplit {
			continue
		}
		t.drainSplit = true
		r.askSplit(t, 0)
		return
	}
}

func (r *sdfRun) handle(ev sdfEvent) error {
	t := ev.task
	switch {
	case ev.fatal != nil:
		return ev.fatal
	case ev.sent:
		t.inst, t.since, t.started, t.reports = ev.inst, time.Now(), time.Now(), 0
	case ev.splitDone:
		r.split = nil
		return r.splitAnswered(t, ev)
	case ev.progressDone:
		r.progressAnswered(t, ev)
	case ev.done:
		delete(r.running, t)
		if ev.err != nil {
			return r.failed(t, ev.err)
		}
		return r.finished(t, ev.res)
	}
	return nil
}

func (r *sdfRun) splitAnswered(t *sdfTask, ev sdfEvent) error {
	if ev.inst != t.inst {
		// The attempt was lost before the answer came; its retry runs the
		// whole primary, residual included.
		return nil
	}
	var res [][]byte
	if ev.err == nil {
		var err error
		if res, err = t.applySplit(r.s.Spec.Source, ev.split); err != nil {
			return fmt.Errorf("stage %s: split of bundle %s: %w", r.s.Spec.Name, t.inst, err)
		}
	}
	if len(res) == 0 {
		// Declined, failed or empty: the bundle goes on whole.
		t.backoff = min(max(2*t.backoff, splitAge), maxSplitBackoff)
		t.since = time.Now()
		t.drainSplit = false // ask again
		return nil
	}
	t.since, t.backoff = time.Now(), 0
	t.stopping = t.stopping || ev.fraction == 0
	if t.holdChannelResidual(ev, len(res)) {
		return nil
	}
	if t.drainSplit {
		// What a drain cut off waits with the stage's other residuals, to
		// be truncated before it runs.
		r.s.pending = append(r.s.pending, res...)
		r.s.resHold = mtime.MinTimestamp
		return nil
	}
	r.queue = append(r.queue, newSDFTask(res))
	return nil
}

// finished commits a bundle like flush does a single one, or runs it
// again, unlifted, when its combine is to run so (unlift.go).
func (r *sdfRun) finished(t *sdfTask, res *fnapi.BundleResult) error {
	if r.s.rerun(t.use, !t.unsure && t.out == nil, res) {
		r.releaseHeld(t, -1) // the attempt's output is dropped
		if t.out != nil {
			return fmt.Errorf("stage %s: bundle %s streamed its output and was to run again unlifted", r.s.Spec.Name, t.inst)
		}
		if t.unsure {
			return fmt.Errorf("stage %s: bundle %s precombined, and cannot be run again unlifted: a split left its input unknown", r.s.Spec.Name, t.inst)
		}
		r.s.dropped(res)
		t.rerun()
		r.queue = append([]*sdfTask{t}, r.queue...)
		return nil
	}
	r.releaseHeld(t, readIndex(res, r.s.Spec.Source))
	if err := r.s.succeeded(r.ctx, t.worker, res, t.use); err != nil {
		return err
	}
	return r.s.commit(r.ctx, res)
}

// warnRetry tells the job that a bundle lost with its worker (err) runs
// again: a retry is not a failure, but one that comes often says workers
// die (out of memory, killed), which the operator must hear of.
func (s *SDKStage) warnRetry(err error, attempt, retries int) {
	if s.Spec.Warn != nil {
		s.Spec.Warn(fmt.Sprintf("stage %s: bundle lost with its worker (%v); retrying it on a new worker (retry %d of %d)",
			s.Spec.Name, err, attempt+1, retries))
	}
}

// failed retries a bundle lost with its worker, as run does, on its primary.
func (r *sdfRun) failed(t *sdfTask, err error) error {
	s := r.s
	retries := s.Spec.MaxRetries
	if retries <= 0 {
		retries = 3
	}
	if !errors.Is(err, fnapi.ErrWorkerLost) || r.ctx.Err() != nil {
		var be *fnapi.BundleError
		if errors.As(err, &be) {
			return fmt.Errorf("stage %s: %s", s.Spec.Name, be.Message)
		}
		return fmt.Errorf("stage %s: %w", s.Spec.Name, err)
	}
	if t.out != nil && t.out.left {
		return s.lostAfterOutput(err, t.out, t.worker)
	}
	if t.attempt >= retries || t.unsure {
		why := fmt.Sprintf("failed %d times", t.attempt+1)
		if t.unsure {
			why = "was lost after a split the SDK did not describe, so it cannot be retried"
		}
		return fmt.Errorf("stage %s: bundle %s: %w; worker's last log lines:\n%s",
			s.Spec.Name, why, err, joinLines(t.worker.LastLogs()))
	}
	s.warnRetry(err, t.attempt, retries)
	if s.worker == t.worker {
		w, rerr := s.Spec.Workers.Replace(r.ctx, s.Spec.Env, t.worker)
		if rerr != nil {
			return fmt.Errorf("stage %s: bundle lost with its worker (%v), and no new worker: %w", s.Spec.Name, err, rerr)
		}
		s.worker = w
	}
	s.Out.stats.retry()
	r.releaseHeld(t, -1) // the attempt's work is void: all of it runs again
	t.retry()
	r.queue = append([]*sdfTask{t}, r.queue...)
	return nil
}
