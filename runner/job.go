package runner

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/joboptions"
	"github.com/weir-runner/weir/metrics"
)

// JobID names one job in the registry. It is unique for the life of a server.
type JobID string

// Executor runs one job to completion. It returns nil when the pipeline
// finished, ctx.Err() when cancelled, and any other error on failure. It
// reports progress through the job (Logf, Metrics) and never changes the
// job's state itself: the registry does that from its return value.
type Executor interface {
	Execute(ctx context.Context, j *Job) error
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, j *Job) error

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, j *Job) error { return f(ctx, j) }

// Job is one submitted pipeline and everything the job API reports about it.
// The fields set at creation never change; the rest is guarded by mu.
type Job struct {
	ID       JobID
	Name     string
	Pipeline *pipepb.Pipeline
	Options  *structpb.Struct
	// StagingDir holds the job's staged artifacts; Artifacts maps each
	// environment ID to its resolved dependencies (FILE artifacts whose paths
	// lie under StagingDir), as workers retrieve them.
	StagingDir string
	Artifacts  map[string][]*pipepb.ArtifactInformation

	// Metrics aggregates the MonitoringInfos of the job's bundles.
	Metrics *metrics.Store

	// submitted is when the job was made (Run, or a resume); log is the
	// job's part of the server's log (joblog.go), set before it runs.
	submitted time.Time
	log       *slog.Logger

	// opts are Options parsed, once: by the server when the job is
	// submitted (a bad option fails the submission), or on first use for a
	// job made another way.
	optsOnce sync.Once
	opts     *joboptions.Options
	optsErr  error

	mu struct {
		sync.Mutex
		state    jobpb.JobState_Enum
		stateAt  time.Time
		err      error
		messages []*jobpb.JobMessage
		nextMsg  int
		// changed is closed and replaced on every state change or message,
		// so streams wait on it without polling.
		changed chan struct{}
	}
	cancel context.CancelFunc
	// drain is closed when a drain is requested.
	drain     chan struct{}
	drainOnce sync.Once
	// sp takes savepoints while the job's checkpoints run.
	spMu sync.Mutex
	sp   *jobCheckpoints
	// recorded says weir serve keeps the job's submission record (set
	// before the job runs); shutdown says the server's shutdown stopped
	// it, so the record stays for the next server to resume it.
	recorded bool
	shutdown atomic.Bool
	// resumed says the job was started from its record; its staged files
	// are the record's.
	resumed bool
	// stagedBytes are the job's staged bytes counted against the
	// server's --max-staged-bytes, and slot says it holds one of
	// --max-concurrent-jobs (confine.go); runJob gives both back.
	stagedBytes int64
	slot        bool
	// observed samples the job's figures while it runs and keeps the last
	// sample after (observe.go); splits report its sources' splits
	// (connectors.go), if any.
	observed atomic.Pointer[observer]
	splits   atomic.Pointer[[]connector.SplitReporter]
	// restarts counts the job's restarts from a checkpoint (restart.go);
	// streamDefault is its executor's --weir_stream_bundle_output for a
	// job that leaves it at auto.
	restarts      atomic.Int64
	streamDefault string
}

// RequestDrain asks the job to finish early without losing data: sources
// stop, restrictions are truncated, and every window fires as the
// watermark reaches the end of time.
func (j *Job) RequestDrain() { j.drainOnce.Do(func() { close(j.drain) }) }

// DrainRequested returns a channel closed once a drain is requested.
func (j *Job) DrainRequested() <-chan struct{} { return j.drain }

func (j *Job) draining() bool {
	select {
	case <-j.drain:
		return true
	default:
		return false
	}
}

// NewJob returns a job in state STOPPED, submitted now. Its log records
// go nowhere until a Server runs it (Job.Logger).
func NewJob(id JobID, name string, p *pipepb.Pipeline, opts *structpb.Struct) *Job {
	now := time.Now()
	j := &Job{ID: id, Name: name, Pipeline: p, Options: opts, Metrics: metrics.NewStore(), drain: make(chan struct{}),
		submitted: now, log: slog.New(slog.DiscardHandler)}
	j.mu.state = jobpb.JobState_STOPPED
	j.mu.stateAt = now
	j.mu.changed = make(chan struct{})
	return j
}

// JobOptions returns the job's options, typed (package joboptions). The
// error is the one that failed their parsing.
func (j *Job) JobOptions() (*joboptions.Options, error) {
	j.optsOnce.Do(func() {
		if j.opts == nil {
			j.opts, j.optsErr = joboptions.Parse(j.Options)
		}
	})
	return j.opts, j.optsErr
}

// withOptions sets the job's options, parsed at submission.
func (j *Job) withOptions(o *joboptions.Options) *Job {
	j.opts = o
	return j
}

// State returns the job's current state and when it was entered.
func (j *Job) State() (jobpb.JobState_Enum, time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.state, j.mu.stateAt
}

// Submitted returns when the job was submitted: when Run (or a resume
// after a restart) made it.
func (j *Job) Submitted() time.Time { return j.submitted }

// Ended returns when the job reached its terminal state, or the zero time
// while it has not.
func (j *Job) Ended() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !IsTerminal(j.mu.state) {
		return time.Time{}
	}
	return j.mu.stateAt
}

// Err returns the error that failed the job, if any.
func (j *Job) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.err
}

// SetState moves the job to s. Terminal states are final: a later call is
// ignored, so a cancel racing a failure reports whichever came first.
func (j *Job) SetState(s jobpb.JobState_Enum) {
	j.mu.Lock()
	changed := j.setStateLocked(s)
	j.mu.Unlock()
	if changed {
		j.logState(s, nil)
	}
}

// setStateLocked reports whether the state changed; the caller logs the
// change once j.mu is released, so no log write happens under it.
func (j *Job) setStateLocked(s jobpb.JobState_Enum) bool {
	if IsTerminal(j.mu.state) || j.mu.state == s {
		return false
	}
	j.mu.state = s
	j.mu.stateAt = time.Now()
	j.notifyLocked()
	return true
}

// Fail records err and moves the job to FAILED.
func (j *Job) Fail(err error) {
	j.mu.Lock()
	if IsTerminal(j.mu.state) {
		j.mu.Unlock()
		return
	}
	j.mu.err = err
	j.appendLocked(jobpb.JobMessage_JOB_MESSAGE_ERROR, err.Error())
	j.setStateLocked(jobpb.JobState_FAILED)
	j.mu.Unlock()
	j.logState(jobpb.JobState_FAILED, err)
}

// Logf adds a job message of the given importance.
func (j *Job) Logf(imp jobpb.JobMessage_MessageImportance, format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.appendLocked(imp, fmt.Sprintf(format, args...))
}

// maxMessages bounds the messages a job keeps; older ones are dropped first.
const maxMessages = 10000

func (j *Job) appendLocked(imp jobpb.JobMessage_MessageImportance, text string) {
	j.mu.nextMsg++
	j.mu.messages = append(j.mu.messages, &jobpb.JobMessage{
		MessageId:   fmt.Sprint(j.mu.nextMsg),
		Time:        time.Now().Format(time.RFC3339Nano),
		Importance:  imp,
		MessageText: text,
	})
	if len(j.mu.messages) > maxMessages {
		j.mu.messages = j.mu.messages[len(j.mu.messages)-maxMessages:]
	}
	j.notifyLocked()
}

func (j *Job) notifyLocked() {
	close(j.mu.changed)
	j.mu.changed = make(chan struct{})
}

// Updates returns the messages after the first skip ones, the current state,
// and a channel closed at the next change. Streams loop on it.
func (j *Job) Updates(skip int) (msgs []*jobpb.JobMessage, state jobpb.JobState_Enum, changed <-chan struct{}) {
	j.mu.Lock()
	defer j.mu.Unlock()
	first := j.mu.nextMsg - len(j.mu.messages) // index of messages[0]
	if skip < first {
		skip = first
	}
	if i := skip - first; i < len(j.mu.messages) {
		msgs = append(msgs, j.mu.messages[i:]...)
	}
	return msgs, j.mu.state, j.mu.changed
}

// IsTerminal reports whether s is a state a job never leaves.
func IsTerminal(s jobpb.JobState_Enum) bool {
	switch s {
	case jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED,
		jobpb.JobState_DRAINED, jobpb.JobState_UPDATED:
		return true
	}
	return false
}
