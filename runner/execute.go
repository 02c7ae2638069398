package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/internal/contain"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/translate"
	"github.com/weir-runner/weir/triggers"
)

// LocalExecutor runs each job in this process: it translates the pipeline,
// serves the Fn API to the job's SDK workers and runs the executor graph.
type LocalExecutor struct {
	// Parallelism is the number of subtasks per stage; default the number
	// of cores.
	Parallelism int
	// NoLift runs combines unlifted unless a job's CombineLiftingOption
	// says otherwise.
	NoLift bool
	// FixedPrecombine keeps lifted combines precombining in every bundle
	// unless a job's AdaptivePrecombineOption says otherwise.
	FixedPrecombine bool
	// NoUnlift keeps lifted combines lifted unless a job's
	// AdaptiveUnliftOption says otherwise.
	NoUnlift bool
	// StateDir holds what jobs keep beyond their end: checkpoints, under
	// jobs/<job name>/checkpoints unless a job names its own folder, so a
	// job submitted again under its name resumes from them. Default weir
	// under the system's temporary folder.
	StateDir string
	// NoMetrics turns off the subtasks' counts and the job's sampling
	// (observe.go): the job's view then has its state and messages only.
	NoMetrics bool
	// Store configures each job's state store. Its folder is made per job
	// under the system's temporary folder (Dir is ignored); FS defaults to
	// the operating system's, and tests inject faults through it (a full
	// disk during a shuffle).
	Store state.Options
	// CheckpointFS is the file system of the jobs' checkpoint folders;
	// default the operating system's. Tests inject faults through it (a
	// full disk during a checkpoint).
	CheckpointFS vfs.FS
	// FnAPIHost is the interface each job's Fn API server (the SDK
	// workers' control, data, state and logging) listens on; empty means
	// fnapi's default, loopback. The Fn API has no TLS nor token: Beam's
	// SDK harnesses dial it in plaintext (docs/security.md).
	FnAPIHost string
	// Connectors are the runner-native transforms jobs may use; default
	// weir's (connector/all). A confined server checks the paths of
	// weir's connectors only.
	Connectors *connector.Registry
	// StreamBundleOutput is --weir_stream_bundle_output for jobs that
	// leave it at auto: "on", "off", or "" (auto) (bundles.go).
	StreamBundleOutput string
}

// NewLocalExecutor returns the executor that runs jobs in this process.
func NewLocalExecutor() Executor { return &LocalExecutor{} }

// execute runs the job once (Execute restarts it, restart.go).
func (e *LocalExecutor) execute(ctx context.Context, j *Job, r *restarts) error {
	stateDir := e.StateDir
	if stateDir == "" {
		stateDir = defaultStateDir()
	}
	ckCfg, err := checkpointOptions(j, stateDir)
	if err != nil {
		return err
	}
	if ckCfg != nil && e.CheckpointFS != nil {
		ckCfg.fs = e.CheckpointFS
	}
	r.adjust(ckCfg)
	opts, err := translateOptions(j, translate.Options{NoLift: e.NoLift, FixedPrecombine: e.FixedPrecombine,
		NoUnlift: e.NoUnlift, Connectors: e.Connectors})
	if err != nil {
		return err
	}
	if opts.Connectors == nil {
		opts.Connectors = connectors()
	}
	// A checkpoint would have to keep which form each combine's shuffle
	// holds; jobs that take them keep their combines lifted.
	opts.NoUnlift = opts.NoUnlift || ckCfg != nil
	if testHookPipeline != nil { // runner/commit.go
		testHookPipeline(j.Pipeline)
	}
	plan, err := translate.Build(j.Pipeline, opts)
	if err != nil {
		return err
	}
	// A panic on one of the job's own goroutines (the sampler, the
	// checkpoint driver and writers) fails the job through failJob, with
	// the panic as the cause; the job's id in ctx is for contain's test
	// hook.
	ctx, failJob := context.WithCancelCause(contain.WithJob(ctx, string(j.ID)))
	defer failJob(nil)
	fn, err := fnapi.NewServer(fnapi.Options{
		JobID: string(j.ID), JobName: j.Name, PipelineOptions: j.Options,
		Artifacts: NewArtifactRetrieval(j), Dependencies: j.Artifacts, Host: e.FnAPIHost,
		OnLog: func(worker string, le *fnpb.LogEntry) {
			if echoesJobMessages(le) {
				return
			}
			j.Logf(importance(le.GetSeverity()), "%s: %s", le.GetLogLocation(), truncate(le.GetMessage(), maxLogMessage))
		},
	})
	if err != nil {
		return err
	}
	defer fn.Stop()
	store, closeStore, err := openJobStore(j, e.Store)
	if err != nil {
		return err
	}
	defer closeStore()
	if testHookStore != nil {
		testHookStore(store)
	}
	workers := newWorkerSet(fn, plan.Components.GetEnvironments(), j)
	defer workers.stopAll()
	p := e.Parallelism
	if p <= 0 {
		p = runtime.NumCPU()
	}
	late, closeLate, err := openLateData(j)
	if err != nil {
		return err
	}
	defer closeLate()
	held, err := newHeldGroups(j, store)
	if err != nil {
		return err
	}
	j.streamDefault = e.StreamBundleOutput
	g, err := buildGraph(plan, fn, workers, store, j, late, held, p)
	if err != nil {
		return err
	}
	g.NoStats = e.NoMetrics
	var obs *observer
	if !e.NoMetrics {
		obs = newObserver(j, plan, g, late, workers, store)
		j.observed.Store(obs)
		obsCtx, stopObs := context.WithCancel(context.Background())
		obsDone := make(chan struct{})
		goContained(contain.Sampler, failJob, obsDone, func() {
			contain.At(contain.Sampler, string(j.ID))
			obs.run(obsCtx)
		})
		// Deferred before the store closes, so the last sample reads it open.
		defer func() { stopObs(); <-obsDone }()
	}
	var barriers chan executor.BarrierID
	var ck *jobCheckpoints
	if ckCfg != nil {
		release, err := claimRoot(ckCfg.fs, ckCfg.dir, j.Name, j.ID)
		if err != nil {
			return err
		}
		// Deferred first, so it runs after the checkpoints are closed.
		defer func() {
			if err := release(); err != nil {
				j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "%v", err)
			}
		}()
		// Before any subtask runs: the store is fresh and nothing read it.
		ckCfg.graph = graphShape(plan, g)
		rp, err := restoreJob(ctx, j, ckCfg, store)
		if err != nil {
			return err
		}
		if rp != nil {
			g.Restore = rp.subtask
		}
		ck, err = startCheckpoints(j, ckCfg, g, store, func(node, sub int) []string {
			return stageNamespaces(plan.Stages[node], sub)
		}, failJob)
		if err != nil {
			return err
		}
		// Runs before the store closes: snapshots must be released first.
		defer ck.close()
		g.Checkpoints, barriers = ck, ck.barriers
		if obs != nil {
			obs.setCheckpoints(ck)
		}
		j.setSavepointer(ck)
		defer j.setSavepointer(nil)
	}
	r.ran = true
	err = g.Run(ctx, barriers)
	if err == nil && ck != nil {
		// Ended by itself (inputs ended, or drained): the next run of the
		// job starts over. After close, so no checkpoint completes later.
		ck.close()
		if err := ck.storage.MarkFinished(time.Now()); err != nil {
			j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "%v", err)
		}
	}
	if cause := context.Cause(ctx); err != nil && (errors.Is(cause, checkpoint.ErrTooManyFailures) || panicked(cause)) {
		// Not the error of whichever subtask saw the cancellation first.
		return cause
	}
	return err
}

// stageNamespaces returns the store namespaces a stage's subtask writes:
// one for a group-by-key, a stateful stage, a two-phase-commit sink or a
// stage with stable input, none otherwise.
func stageNamespaces(s *translate.Stage, sub int) []string {
	if s.Kind == translate.KindGBK || (s.Kind == translate.KindSDK && s.Stateful != nil) || keepsPending(s) {
		return []string{stageNamespace(s, sub)}
	}
	return nil
}

// stageNamespace is the namespace of a stage's subtask in the store.
func stageNamespace(s *translate.Stage, sub int) string { return fmt.Sprintf("%s/%d", s.ID, sub) }

// maxLogMessage bounds one worker log line kept as a job message.
const maxLogMessage = 4 << 10

// echoesJobMessages reports whether a worker log entry is the submitting
// client printing this job's own messages. A LOOPBACK worker runs inside
// the client and sends the client's logs to the runner too; turning those
// back into job messages would feed them to the client again, without end.
func echoesJobMessages(le *fnpb.LogEntry) bool {
	return strings.Contains(le.GetLogLocation(), "runners/universal/runnerlib/")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes cut)", len(s)-n)
}

// openJobStore opens the job's state store with opts in a folder of its
// own, removed with the store when the job ends.
func openJobStore(j *Job, opts state.Options) (*state.Store, func(), error) {
	dir, err := os.MkdirTemp("", "weir-state-*")
	if err != nil {
		return nil, nil, fmt.Errorf("state folder: %w", err)
	}
	opts.Dir = dir
	store, err := state.Open(opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return store, func() {
		if err := store.Close(); err != nil {
			j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "%v", err)
		}
		os.RemoveAll(dir)
	}, nil
}

func importance(s fnpb.LogEntry_Severity_Enum) jobpb.JobMessage_MessageImportance {
	switch {
	case s >= fnpb.LogEntry_Severity_ERROR:
		return jobpb.JobMessage_JOB_MESSAGE_ERROR
	case s >= fnpb.LogEntry_Severity_WARN:
		return jobpb.JobMessage_JOB_MESSAGE_WARNING
	case s >= fnpb.LogEntry_Severity_INFO:
		return jobpb.JobMessage_JOB_MESSAGE_BASIC
	case s >= fnpb.LogEntry_Severity_DEBUG:
		return jobpb.JobMessage_JOB_MESSAGE_DEBUG
	}
	return jobpb.JobMessage_JOB_MESSAGE_DETAILED
}

// testHookStore, if set, is handed each job's store once it is open.
var testHookStore func(*state.Store)

// buildGraph makes one executor node per stage.
func buildGraph(plan *translate.Plan, fn *fnapi.Server, workers *workerSet, store *state.Store, j *Job, late *executor.LateData, held *heldGroups, parallelism int) (*executor.Graph, error) {
	spread, err := spreadWarning(j)
	if err != nil {
		return nil, err
	}
	limits, err := bundleOptions(j)
	if err != nil {
		return nil, err
	}
	g := &executor.Graph{SpreadWarning: spread, Warn: graphWarn(j, plan)}
	nodeOf := map[translate.StageID]int{}
	// A connector may need the job to run one subtask per stage: a
	// TestStream's events must be seen in the order it replays them, and
	// subtasks in parallel reorder them.
	for _, s := range plan.Stages {
		if placement(s).Serial {
			parallelism = 1
		}
	}
	unlift, err := unliftSpecs(plan, fn)
	if err != nil {
		return nil, err
	}
	svc := newJobServices(j)
	metricsFn := func(infos []*pipepb.MonitoringInfo, committed bool) {
		if committed {
			j.Metrics.Commit(infos)
		} else {
			j.Metrics.Attempt(infos)
		}
	}
	for _, s := range plan.Stages {
		n := &executor.Node{Name: fmt.Sprintf("%s(%s)", s.ID, s.Name), Parallelism: parallelism, Outputs: len(s.Outputs)}
		for i, in := range s.Inputs {
			src := plan.PColls[in.PColl]
			from, ok := nodeOf[src.Producer]
			if !ok {
				return nil, fmt.Errorf("stage %s reads %s before its producer %s is built", s.Name, src.Name, src.Producer)
			}
			ni := executor.NodeInput{From: from, Output: outputIndex(plan, src), Partition: executor.Forward}
			switch {
			case in.Side != nil:
				ni.Port, ni.Partition = i, executor.Broadcast
			case s.Kind == translate.KindGBK || s.Stateful != nil || placement(s).Keyed:
				if src.Key == nil {
					return nil, fmt.Errorf("stage %s: keyed input %s is not a KV", s.Name, src.Name)
				}
				ni.Partition, ni.Key = executor.Hash, keyFunc(src)
			}
			n.Inputs = append(n.Inputs, ni)
		}
		switch s.Kind {
		case translate.KindImpulse:
			n.Parallelism = 1
			n.NewSource = func(int, *executor.Output) (executor.Source, error) { return executor.Impulse{}, nil }
		case translate.KindFlatten:
			if len(n.Inputs) == 0 { // Flatten.pCollections() of an empty list
				n.Parallelism = 1
				n.NewSource = func(int, *executor.Output) (executor.Source, error) { return executor.Empty{}, nil }
				break
			}
			n.New = func(_ int, out *executor.Output) (executor.Operator, error) { return &executor.Flatten{Out: out}, nil }
		case translate.KindNative:
			if err := nativeNode(n, s, plan, store, svc, late); err != nil { // runner/connectors.go
				return nil, err
			}
		case translate.KindGBK:
			in := plan.PColls[s.MainInput()]
			acct := late.Transform(s.Transforms[0], s.Name)
			if s.Triggered {
				tr, err := triggers.FromProto(s.Trigger)
				if err != nil {
					return nil, fmt.Errorf("stage %s: %w", s.Name, err)
				}
				n.New = func(sub int, out *executor.Output) (executor.Operator, error) {
					return &executor.TriggeredGroupByKey{Name: s.Name, In: in.Codec, Key: in.Key, OutputTime: s.OutputTime,
						Trigger: tr, Accumulating: s.Accumulating, Merging: s.Merging, AllowedLateness: mtime.Time(s.AllowedLateness),
						FinalAlways: s.FinalAlways, OnTimeAlways: s.OnTimeAlways,
						Windows: store.NewTriggerWindows(stageNamespace(s, sub)), Out: out, Late: acct}, nil
				}
				break
			}
			n.New = func(sub int, out *executor.Output) (executor.Operator, error) {
				buf := store.NewShuffle(stageNamespace(s, sub))
				held.shuffle(plan, s, buf)
				return &executor.GroupByKey{Name: s.Name, In: in.Codec, Key: in.Key, OutputTime: s.OutputTime,
					Merging: s.Merging, AllowedLateness: mtime.Time(s.AllowedLateness),
					Buf: buf, Out: out, Late: acct}, nil
			}
		case translate.KindSDK:
			spec, err := sdkSpec(plan, s, fn, workers, metricsFn, j.DrainRequested(), stageWarn(j, s.Name, -1))
			if err != nil {
				return nil, err
			}
			if readsImpulse(plan, s) {
				n.Arrivals = late.Source(s.Transforms[0], s.Name)
			}
			spec.Held = held.input(plan, s)
			spec.Unlift = unlift[s.ID]
			spec.MaxElems, spec.MaxBytes, spec.MaxBundleTime = limits.elems, limits.bytes, limits.time
			spec.StreamOutput = limits.stream
			n.New = func(sub int, out *executor.Output) (executor.Operator, error) {
				st := executor.NewSDKStage(subtaskSpec(spec, j, s, sub), out)
				if s.Stateful != nil {
					st.User = store.NewUserState(stageNamespace(s, sub))
				}
				return st, nil
			}
			stableInput(n, s, store, j) // runner/commit.go
		}
		nodeOf[s.ID] = len(g.Nodes)
		g.Nodes = append(g.Nodes, n)
	}
	return g, nil
}

// readsImpulse reports whether an SDK stage is a source: its main input is
// an Impulse, so what it emits (an SDF's reads, generated elements) enters
// the job there.
func readsImpulse(plan *translate.Plan, s *translate.Stage) bool {
	if len(s.Inputs) == 0 {
		return false
	}
	pc := plan.PColls[s.Inputs[0].PColl]
	for _, p := range plan.Stages {
		if p.ID == pc.Producer {
			return p.Kind == translate.KindImpulse
		}
	}
	return false
}

func outputIndex(plan *translate.Plan, pc *translate.PColl) int {
	for _, s := range plan.Stages {
		if s.ID == pc.Producer {
			for i, o := range s.Outputs {
				if o == pc.ID {
					return i
				}
			}
		}
	}
	return -1
}

func keyFunc(pc *translate.PColl) executor.KeyFunc {
	return func(e []byte) ([]byte, error) {
		v, err := pc.Codec.ValueOf(e)
		if err != nil {
			return nil, err
		}
		n, err := pc.Key(v)
		if err != nil {
			return nil, err
		}
		return v[:n], nil
	}
}

func sdkSpec(plan *translate.Plan, s *translate.Stage, fn *fnapi.Server, workers *workerSet, m func([]*pipepb.MonitoringInfo, bool), drain <-chan struct{}, warn func(string)) (*executor.SDKStageSpec, error) {
	d, err := plan.Descriptor(s, fn.APIDescriptor())
	if err != nil {
		return nil, err
	}
	fn.RegisterDescriptor(d)
	spec := &executor.SDKStageSpec{Name: s.Name, Env: s.EnvID, DescriptorID: d.GetId(),
		Source: s.Source, SDF: s.SDF, Finalize: s.Finalize, Workers: workers, Metrics: m,
		Drain: drain, MainCodec: plan.PColls[s.MainInput()].Codec, Warn: warn}
	if s.Truncate != nil {
		td, err := plan.TruncateDescriptor(s, fn.APIDescriptor())
		if err != nil {
			return nil, err
		}
		fn.RegisterDescriptor(td)
		spec.TruncateDescriptor, spec.TruncateSource, spec.TruncateSink = td.GetId(), translate.TruncateSource, translate.TruncateSink
	}
	if len(s.Precombines) > 0 {
		cd, err := plan.ConvertDescriptor(s, fn.APIDescriptor())
		if err != nil {
			return nil, err
		}
		fn.RegisterDescriptor(cd)
		spec.Lift = &executor.LiftSpec{ConvertDescriptor: cd.GetId()}
		for _, pc := range s.Precombines {
			spec.Lift.Transforms = append(spec.Lift.Transforms, pc.Transform)
			spec.Lift.Inputs = append(spec.Lift.Inputs, pc.Input)
			spec.Lift.Outputs = append(spec.Lift.Outputs, pc.Output)
		}
	}
	if st := s.Stateful; st != nil {
		spec.Key = keyFunc(plan.PColls[s.MainInput()])
		spec.Stateful = &executor.StatefulSpec{Transform: st.TransformID, OrderedLists: st.OrderedLists,
			AllowedLateness: st.AllowedLateness, WindowExpiration: st.WindowExpiration}
		spec.Stateful.StateIDs = st.StateIDs
		for _, f := range st.Timers {
			spec.Stateful.Timers = append(spec.Stateful.Timers, executor.TimerFamilySpec{ID: f.ID, ProcessingTime: f.ProcessingTime, Codec: f.Codec})
		}
	}
	for _, out := range s.Outputs {
		spec.Sinks = append(spec.Sinks, s.Sinks[out])
		spec.SinkCodecs = append(spec.SinkCodecs, plan.PColls[out].Codec)
	}
	for _, in := range s.Inputs {
		if in.Side == nil {
			continue
		}
		pc := plan.PColls[in.PColl]
		si := executor.SideInputSpec{TransformID: in.Side.TransformID, LocalName: in.Side.LocalName,
			Multimap: in.Side.Pattern == translate.URNSideMultimap, Codec: pc.Codec, Key: pc.Key,
			Windows: executor.SideWindows{Size: mtime.Time(in.Side.Size), Period: mtime.Time(in.Side.Period),
				Offset: mtime.Time(in.Side.Offset)}}
		if si.Multimap && si.Key == nil {
			return nil, fmt.Errorf("stage %s: multimap side input %s is not a KV", s.Name, pc.Name)
		}
		spec.SideInputs = append(spec.SideInputs, si)
	}
	return spec, nil
}
