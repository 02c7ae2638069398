package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/timers"
	"github.com/weir-runner/weir/watermarkmgr"
	"github.com/weir-runner/weir/wire"
)

// Workers hands SDK stages a worker for their environment, and a fresh one
// when a worker is lost.
type Workers interface {
	Worker(ctx context.Context, env string) (*fnapi.Worker, error)
	Replace(ctx context.Context, env string, lost *fnapi.Worker) (*fnapi.Worker, error)
}

// SDKStageSpec is what every subtask of an SDK stage shares.
type SDKStageSpec struct {
	Name         string
	Env          string
	DescriptorID string
	Source       string
	// Sinks are the descriptor's sink transforms in output port order, with
	// the codec that splits each one's output into elements.
	Sinks      []string
	SinkCodecs []*wire.Codec
	SideInputs []SideInputSpec // ports 1..n
	// SDF stages re-queue their residuals as main input.
	SDF      bool
	Finalize bool
	// Drain is closed when the job is drained. An SDF stage then truncates
	// the restrictions it has left, through the truncation descriptor, and
	// runs what remains without waiting for resume delays.
	Drain              <-chan struct{}
	TruncateDescriptor string
	TruncateSource     string
	TruncateSink       string
	// Warn, if set, receives job messages worth a user's attention, such
	// as an SDF bundle that runs for longer than RunawayAfter (default a
	// minute) without finishing. It may be called from any goroutine.
	Warn         func(msg string)
	RunawayAfter time.Duration
	// MaxBundleOutput bounds the output bytes an SDF bundle buffers before
	// it is checkpointed; default 16 MiB (maxBundleOutput).
	MaxBundleOutput int
	// MainCodec splits main-input elements (truncated restrictions).
	MainCodec *wire.Codec
	// Key returns the key of a main-input element; set for stateful stages.
	Key KeyFunc
	// Stateful is set for stages whose first transform uses user state or
	// timers; their main input arrives partitioned by key.
	Stateful *StatefulSpec
	// Held is set when the main input's large groups arrive as
	// state-backed iterables (heldinput.go).
	Held *HeldInput

	Workers Workers
	Metrics func(infos []*pipepb.MonitoringInfo, committed bool)
	// MaxElems and MaxBytes bound a bundle's input; defaults 65,536
	// elements and 16 MiB (maxBundleElems, maxBundleBytes).
	MaxElems int
	MaxBytes int
	// MaxBundleTime closes a bundle this long after its first element
	// arrived, if nothing else closed it (size, watermark, barrier):
	// otherwise elements trickling in while the watermark stands still
	// would wait in an open bundle without bound. Default 1 s, as Beam's
	// Flink runner's maxBundleTimeMills.
	MaxBundleTime time.Duration
	MaxRetries    int // bundles retried after a lost worker; default 3
	// StreamOutput sends bundles' output downstream as it arrives rather
	// than when they finish; a bundle lost after some left is not retried
	// (sdkstage_stream.go).
	StreamOutput bool
	// Lift, if set, lets the stage run its precombines as one-by-one
	// conversions when they do not reduce (liftswitch.go).
	Lift *LiftSpec
	// Unlift, if set, is the stage's part in running a lifted combine
	// unlifted (unlift.go).
	Unlift *UnliftSpec
	// SplitBundles bounds the bundles an SDF stage's subtask runs at once,
	// splitting them from one another (split.go); default GOMAXPROCS, and
	// 1 runs SDF bundles whole, one at a time.
	SplitBundles int
}

// SDKStage runs bundles of its main input on an SDK worker.
type SDKStage struct {
	Spec *SDKStageSpec
	Out  *Output

	pending [][]byte
	bytes   int
	// openedAt is when the first main-input element of the pending
	// bundle arrived; zero when pending is empty or holds only residuals,
	// which wait by their own delay.
	openedAt time.Time
	// waiting holds main-input elements whose side windows are not yet
	// complete; waitHold is their least timestamp.
	waiting    [][]byte
	waitHold   mtime.Time
	winScratch [][]byte
	side       *sideState
	sides      []*sideInput
	mainWM     mtime.Time // input watermark of the main input
	// wm turns the main input's watermark and the stage's holds into the
	// output watermark.
	wm *watermarkmgr.Manager
	// resumeAt is when the pending residuals may run: the least resume
	// delay their SDF asked for, from when it returned them (sdfresume.go).
	// Zero when there is none.
	resumeAt time.Time
	// resHold is the least output watermark the SDK estimated for the
	// pending residuals: it holds the stage's output watermark while they
	// wait.
	resHold mtime.Time
	// truncated is set while pending holds restrictions truncated for a
	// drain, which run to their end uncut.
	truncated bool
	worker    *fnapi.Worker
	// lift picks how bundles run the stage's precombines (Spec.Lift).
	lift  liftSwitch
	state *stageState

	// User holds the subtask's user state; set for stateful stages.
	User   *state.UserState
	ustate *userState
	timers *timers.Set
	// expiry holds the window expirations of a transform with an
	// OnWindowExpiration callback; nil otherwise (expiry.go).
	expiry    *timers.Set
	synthetic bool       // processing time comes from a TestStream
	procTime  mtime.Time // the synthetic processing time
}

// NewSDKStage returns one subtask's operator.
func NewSDKStage(spec *SDKStageSpec, out *Output) *SDKStage {
	s := &SDKStage{Spec: spec, Out: out, mainWM: mtime.MinTimestamp, wm: watermarkmgr.New(1),
		waitHold: mtime.MaxTimestamp}
	s.side = &sideState{stage: spec.Name, by: map[[2]string]*sideInput{}}
	for _, si := range spec.SideInputs {
		in := newSideInput(si)
		s.sides = append(s.sides, in)
		s.side.by[[2]string{si.TransformID, si.LocalName}] = in
	}
	s.state = &stageState{side: s.side}
	if spec.Held != nil {
		s.state.held = &heldState{stage: spec.Name, in: spec.Held}
	}
	if st := spec.Stateful; st != nil {
		s.timers = timers.New()
		if st.WindowExpiration != "" {
			s.expiry = timers.New()
		}
		s.ustate = &userState{stage: spec.Name, transform: st.Transform, ids: map[string]bool{},
			ordered: st.OrderedLists, lateness: st.AllowedLateness}
		for _, id := range st.StateIDs {
			s.ustate.ids[id] = true
		}
		s.state.user = s.ustate
	}
	return s
}

// sidesReady reports whether every side input has ended. Timers wait for
// that: a timer may read any window of a side input.
func (s *SDKStage) sidesReady() bool {
	for _, si := range s.sides {
		if !si.done() {
			return false
		}
	}
	return true
}

// Process implements Operator. A main-input element waits until the side
// window each of its windows maps to is complete in every side input.
func (s *SDKStage) Process(ctx context.Context, port int, elems [][]byte) error {
	if port > 0 {
		if port > len(s.sides) {
			return fmt.Errorf("stage %s: input on unknown port %d", s.Spec.Name, port)
		}
		s.side.mu.Lock()
		defer s.side.mu.Unlock()
		return s.sides[port-1].add(elems)
	}
	waitable := !s.sidesReady() // decided once per batch, not per element
	for _, e := range elems {
		if waitable {
			ready, ts, err := s.readyForSides(e)
			if err != nil {
				return err
			}
			if !ready {
				s.waiting = append(s.waiting, e)
				s.waitHold = min(s.waitHold, ts)
				continue
			}
		}
		if s.openedAt.IsZero() {
			s.openedAt = time.Now()
		}
		s.pending = append(s.pending, e)
		s.bytes += len(e)
		// Checked per element, not per batch, so MaxElems and MaxBytes
		// bound a bundle even where a batch brings more.
		if s.full() {
			if err := s.flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// bundleDue returns when the open bundle must close by MaxBundleTime.
func (s *SDKStage) bundleDue() (time.Time, bool) {
	if s.openedAt.IsZero() || len(s.pending) == 0 || s.Spec.Unlift.awaits() {
		return time.Time{}, false
	}
	d := s.Spec.MaxBundleTime
	if d <= 0 {
		d = time.Second
	}
	return s.openedAt.Add(d), true
}

// readyForSides reports whether element e may run now, and its timestamp.
func (s *SDKStage) readyForSides(e []byte) (bool, mtime.Time, error) {
	if s.sidesReady() {
		return true, 0, nil
	}
	wv, _, err := s.Spec.MainCodec.Decode(e, s.winScratch)
	if err != nil {
		return false, 0, fmt.Errorf("stage %s: main input: %w", s.Spec.Name, err)
	}
	s.winScratch = wv.Windows
	for _, w := range wv.Windows {
		end := wire.WindowMaxTimestamp(w)
		for _, si := range s.sides {
			if !si.readyFor(end) {
				return false, wv.Timestamp, nil
			}
		}
	}
	return true, wv.Timestamp, nil
}

// release moves the waiting elements whose side windows are now complete
// to the pending input, in arrival order.
func (s *SDKStage) release() error {
	if len(s.waiting) == 0 {
		return nil
	}
	still := s.waiting[:0]
	hold := mtime.MaxTimestamp
	for _, e := range s.waiting {
		ready, ts, err := s.readyForSides(e)
		if err != nil {
			return err
		}
		if !ready {
			still = append(still, e)
			hold = min(hold, ts)
			continue
		}
		if s.openedAt.IsZero() {
			s.openedAt = time.Now() // main input now, which does not wait for residuals' delays
		}
		s.pending = append(s.pending, e)
		s.bytes += len(e)
	}
	clear(s.waiting[len(still):])
	s.waiting, s.waitHold = still, hold
	return nil
}

func (s *SDKStage) full() bool {
	maxE, maxB := s.Spec.MaxElems, s.Spec.MaxBytes
	if maxE <= 0 {
		maxE = maxBundleElems
	}
	if maxB <= 0 {
		maxB = maxBundleBytes
	}
	return len(s.pending) >= maxE || s.bytes >= maxB
}

// Default bounds of a bundle's input. Bundles close early when the
// watermark moves, at a barrier, or MaxBundleTime after they open, so these
// bind only where input arrives faster than that: a group-by-key firing
// its groups at the end of a bounded input, a backfill. There, each bundle
// costs the SDK a request, a descriptor lookup and a metrics report, and
// how much input waits in a worker sets how often a Go worker collects
// garbage: a Go SDK worker fed 4 MiB bundles of grouped values ran a
// collection every 12 ms, about a tenth of its CPU, and 40% fewer with
// 16 MiB (docs/decisions.md). The price is memory (a bundle's
// input and output wait in the runner until it commits) and a longer wait
// for a bundle of a slow DoFn at an aligned barrier.
const (
	maxBundleElems = 1 << 16
	maxBundleBytes = 16 << 20
)

// Watermark implements Operator. A side input's watermark completes its
// windows and releases the main-input elements waiting for them; the main
// input's fires timers once every side input has ended.
func (s *SDKStage) Watermark(ctx context.Context, port int, wm mtime.Time) error {
	if port > 0 {
		s.side.mu.Lock()
		s.sides[port-1].wm = max(s.sides[port-1].wm, wm)
		s.side.mu.Unlock()
		if err := s.release(); err != nil {
			return err
		}
	} else {
		s.mainWM = wm
	}
	if err := s.flushDue(ctx); err != nil {
		return err
	}
	if s.sidesReady() {
		if err := s.fireDue(ctx, timers.EventTime, s.mainWM); err != nil {
			return err
		}
		if err := s.collect(s.mainWM); err != nil {
			return err
		}
	}
	return s.forwardWatermark(ctx)
}

// forwardWatermark passes the input watermark on once no element before it
// is waiting: pending residuals hold it back, and so do the output
// timestamps of live timers.
func (s *SDKStage) forwardWatermark(ctx context.Context) error {
	if err := s.wm.Advance(0, s.mainWM); err != nil {
		return fmt.Errorf("stage %s: %w", s.Spec.Name, err)
	}
	if len(s.pending) > 0 {
		s.wm.SetHold(holdResiduals, s.resHold)
	} else {
		s.wm.ReleaseHold(holdResiduals)
	}
	if len(s.waiting) > 0 {
		s.wm.SetHold(holdSideInputs, s.waitHold)
	} else {
		s.wm.ReleaseHold(holdSideInputs)
	}
	if s.timers != nil {
		s.wm.SetHold(holdTimers, s.timers.Hold())
	}
	if s.expiry != nil {
		s.wm.SetHold(holdExpiry, s.expiryHold())
	}
	wm, advanced := s.wm.Emit()
	if !advanced {
		return nil
	}
	return s.Out.Watermark(ctx, wm)
}

// Holds on an SDK stage's output watermark.
const (
	holdResiduals watermarkmgr.HoldID = "residuals" // SDF residuals waiting
	holdTimers    watermarkmgr.HoldID = "timers"    // output timestamps of live timers
	// holdExpiry: the max timestamps of windows whose OnWindowExpiration
	// callbacks are still to run.
	holdExpiry watermarkmgr.HoldID = "window expiration"
	// holdSideInputs: main-input elements waiting for their side windows.
	holdSideInputs watermarkmgr.HoldID = "side inputs"
)

// Barrier implements Operator: close the bundle so the snapshot sees no
// element half-processed. Residuals waiting for their resume delay stay
// pending: the snapshot holds them, with when they resume.
func (s *SDKStage) Barrier(ctx context.Context, _ BarrierID) error {
	return s.flushDue(ctx)
}

// Finish implements Operator: run until no residual is left.
func (s *SDKStage) Finish(ctx context.Context) error {
	s.side.mu.Lock()
	for _, si := range s.sides {
		si.wm = mtime.MaxTimestamp
	}
	s.side.mu.Unlock()
	if err := s.release(); err != nil {
		return err
	}
	for len(s.pending) > 0 {
		if s.draining() {
			if err := s.truncate(ctx); err != nil {
				return err
			}
			if len(s.pending) == 0 {
				break
			}
		} else if d := time.Until(s.resumeAt); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-s.Spec.Drain:
				t.Stop()
				continue
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		if err := s.flush(ctx); err != nil {
			return err
		}
		// An unbounded SDF resumes here for as long as it runs; its
		// watermark estimates let downstream windows close meanwhile.
		if err := s.forwardWatermark(ctx); err != nil {
			return err
		}
		// Its input has ended, so checkpoints reach it by injection.
		if err := PollBarriers(ctx); err != nil {
			return err
		}
	}
	if err := s.fireAll(ctx); err != nil {
		return err
	}
	if err := s.collect(mtime.MaxTimestamp); err != nil {
		return err
	}
	return s.forwardWatermark(ctx)
}

// flush runs the pending input as one bundle.
func (s *SDKStage) flush(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	in := s.pending
	s.pending, s.bytes, s.resumeAt, s.openedAt = nil, 0, time.Time{}, time.Time{}
	defer func() { s.truncated = false }()
	if s.Spec.SDF && s.splitBundles() > 1 {
		return s.runSplitting(ctx, in)
	}
	return s.runBundle(ctx, in, nil)
}

// runBundle runs elements and fired timers as one bundle and passes its
// outputs, residuals and timers on.
func (s *SDKStage) runBundle(ctx context.Context, in [][]byte, fired []timers.Timer) error {
	res, err := s.run(ctx, in, fired)
	if err != nil {
		return err
	}
	// The bundle is done reading its held groups; a retry would have
	// needed them.
	if err := s.state.held.release(in); err != nil {
		return err
	}
	if s.timers != nil {
		if err := s.applyTimers(res); err != nil {
			return err
		}
	}
	if err := s.sawInput(in); err != nil {
		return err
	}
	return s.commit(ctx, res)
}

// commit sends a finished bundle's outputs on and keeps its residuals.
// The elements are cut out of the frames the SDK sent, as a streamed
// bundle's are, so its output is not joined into a second copy; and each
// frame is let go once cut, so it is freed as soon as downstream is done
// with its elements (a group-by-key copies them), not when the whole
// output has gone.
func (s *SDKStage) commit(ctx context.Context, res *fnapi.BundleResult) error {
	out := s.newOutStream(ctx, s.Spec.Sinks, nil)
	for _, sink := range s.Spec.Sinks {
		frames := res.Outputs[sink]
		for i, f := range frames {
			frames[i] = nil
			if err := out.take(sink, f); err != nil {
				return err
			}
		}
	}
	if err := out.end(); err != nil {
		return err
	}
	return s.residuals(res.Response)
}

// emitBatch bounds the elements sent downstream in one message, so a large
// bundle's output flows on in pieces rather than as one huge batch.
const emitBatch = 1024

func (s *SDKStage) residuals(resp *fnpb.ProcessBundleResponse) error {
	roots := resp.GetResidualRoots()
	if len(roots) == 0 {
		return nil
	}
	if !s.Spec.SDF {
		return fmt.Errorf("stage %s: the SDK returned %d residuals for a stage that processes no restrictions", s.Spec.Name, len(roots))
	}
	if len(s.pending) == 0 {
		// else the minimum goes on over this flush's bundles
		s.resumeAt = time.Time{}
		s.resHold = mtime.MaxTimestamp
	}
	now := time.Now()
	for _, r := range roots {
		s.resHold = min(s.resHold, residualWatermark(r))
		e := r.GetApplication().GetElement()
		s.pending = append(s.pending, e)
		s.bytes += len(e)
		at := now.Add(r.GetRequestedTimeDelay().AsDuration())
		if s.resumeAt.IsZero() || at.Before(s.resumeAt) {
			s.resumeAt = at
		}
	}
	return nil
}

// residualWatermark is the SDK's watermark estimate for a residual's
// outputs: the least over them, or the start of time when it gave none.
func residualWatermark(r *fnpb.DelayedBundleApplication) mtime.Time {
	wms := r.GetApplication().GetOutputWatermarks()
	if len(wms) == 0 {
		return mtime.MinTimestamp
	}
	wm := mtime.MaxTimestamp
	for _, ts := range wms {
		wm = min(wm, mtime.FromTime(ts.AsTime()))
	}
	return wm
}

// run runs one bundle, replacing a lost worker and retrying a bounded
// number of times. A failure reported by the SDK is not retried: user code
// fails the same way again.
func (s *SDKStage) run(ctx context.Context, in [][]byte, fired []timers.Timer) (*fnapi.BundleResult, error) {
	stream := s.streams()
	desc, use := s.descriptor()
	return s.runOn(ctx, desc, use, s.Spec.Source, s.Spec.Sinks, in, fired, stream)
}

// runOn runs a bundle on descriptor desc, whose main input is source; use
// says how desc runs the stage's precombines, stream whether its output
// goes downstream as it arrives.
func (s *SDKStage) runOn(ctx context.Context, desc string, use liftUse, source string, sinks []string, in [][]byte, fired []timers.Timer, stream bool) (*fnapi.BundleResult, error) {
	retries := s.Spec.MaxRetries
	if retries <= 0 {
		retries = 3
	}
	for attempt := 0; ; attempt++ {
		if s.worker == nil {
			w, err := s.Spec.Workers.Worker(ctx, s.Spec.Env)
			if err != nil {
				return nil, fmt.Errorf("stage %s: %w", s.Spec.Name, err)
			}
			s.worker = w
		}
		if s.User != nil {
			keys, err := s.bundleKeys(in, fired)
			if err != nil {
				return nil, err
			}
			s.ustate.begin(s.User, keys)
		}
		began := time.Now()
		req := fnapi.BundleRequest{
			DescriptorID: desc,
			Inputs:       []fnapi.Input{{TransformID: source, Elements: in}},
			Outputs:      sinks,
			Timers:       s.timerInputs(fired),
			State:        s.state,
		}
		var out *outStream
		if stream {
			out = s.newOutStream(ctx, sinks, nil)
			req.Stream = out.take
		}
		res, err := s.worker.Process(ctx, req)
		if err == nil && out != nil {
			err = out.end()
		}
		if s.User != nil {
			if cerr := s.ustate.end(err == nil); cerr != nil {
				return nil, fmt.Errorf("stage %s: %w", s.Spec.Name, cerr)
			}
		}
		if err == nil {
			s.Out.stats.bundle(time.Since(began))
			if s.rerun(use, out == nil, res) {
				if out != nil {
					return nil, fmt.Errorf("stage %s: a bundle that streamed its output was to run again unlifted", s.Spec.Name)
				}
				s.dropped(res)
				desc, _ := s.Spec.Unlift.descriptor()
				return s.runOn(ctx, desc, liftUnlifted, source, sinks, in, fired, stream)
			}
			if err := s.succeeded(ctx, s.worker, res, use); err != nil {
				return nil, err
			}
			return res, nil
		}
		if out != nil && out.left && errors.Is(err, fnapi.ErrWorkerLost) && ctx.Err() == nil {
			return nil, s.lostAfterOutput(err, out, s.worker)
		}
		if !errors.Is(err, fnapi.ErrWorkerLost) || attempt >= retries || ctx.Err() != nil {
			var be *fnapi.BundleError
			if errors.As(err, &be) {
				return nil, fmt.Errorf("stage %s: %s", s.Spec.Name, be.Message)
			}
			if errors.Is(err, fnapi.ErrWorkerLost) {
				return nil, fmt.Errorf("stage %s: bundle failed %d times: %w; worker's last log lines:\n%s",
					s.Spec.Name, attempt+1, err, joinLines(s.worker.LastLogs()))
			}
			return nil, fmt.Errorf("stage %s: %w", s.Spec.Name, err)
		}
		s.Out.stats.retry()
		s.warnRetry(err, attempt, retries)
		w, rerr := s.Spec.Workers.Replace(ctx, s.Spec.Env, s.worker)
		if rerr != nil {
			return nil, fmt.Errorf("stage %s: bundle lost with its worker (%v), and no new worker: %w", s.Spec.Name, err, rerr)
		}
		s.worker = w
	}
}

// succeeded records a finished bundle's metrics as committed and runs its
// finalization callbacks, now that the runner keeps its results.
func (s *SDKStage) succeeded(ctx context.Context, w *fnapi.Worker, res *fnapi.BundleResult, use liftUse) error {
	infos := s.liftFinished(res.Response.GetMonitoringInfos(), use)
	if s.Spec.Metrics != nil {
		s.Spec.Metrics(infos, true)
	}
	if s.Spec.Finalize && res.Response.GetRequiresFinalization() {
		if err := w.Finalize(ctx, res.Instruction); err != nil {
			return fmt.Errorf("stage %s: finalize bundle: %w", s.Spec.Name, err)
		}
	}
	return nil
}

func joinLines(ls []string) string {
	out := ""
	for _, l := range ls {
		out += "  " + l + "\n"
	}
	return out
}

// draining reports whether the job is being drained and the stage can
// truncate its restrictions.
func (s *SDKStage) draining() bool {
	if s.Spec.Drain == nil || s.Spec.TruncateDescriptor == "" {
		return false
	}
	select {
	case <-s.Spec.Drain:
		return true
	default:
		return false
	}
}

// truncate replaces the pending restrictions with what the SDK's
// truncation leaves of them; a restriction truncated to nothing is gone.
func (s *SDKStage) truncate(ctx context.Context) error {
	in := s.pending
	s.pending, s.bytes, s.resumeAt = nil, 0, time.Time{}
	res, err := s.runOn(ctx, s.Spec.TruncateDescriptor, liftNone, s.Spec.TruncateSource, []string{s.Spec.TruncateSink}, in, nil, false)
	if err != nil {
		return fmt.Errorf("stage %s: truncate restrictions on drain: %w", s.Spec.Name, err)
	}
	s.truncated = true
	b := res.Outputs[s.Spec.TruncateSink].Bytes()
	for len(b) > 0 {
		n, err := s.Spec.MainCodec.Measure(b)
		if err != nil {
			return fmt.Errorf("stage %s: truncated restriction: %w", s.Spec.Name, err)
		}
		s.pending = append(s.pending, b[:n:n])
		s.bytes += n
		b = b[n:]
	}
	return nil
}
