package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/internal/contain"
	"github.com/weir-runner/weir/state"
)

// The checkpoint options are CheckpointIntervalOption and the others
// beside it (declared in joboptions); checkpoints are off unless a job
// sets the interval.

// checkpointConfig is what a job's options ask of checkpoints.
type checkpointConfig struct {
	coord checkpoint.Options
	dir   string
	keep  int
	// restore says whether the job resumes from the root's newest
	// checkpoint (RestoreOption); graph is the job's graph, which every
	// manifest records and a restore must match.
	restore bool
	graph   []checkpoint.GraphNode
	// savepoint is the savepoint the job starts from, if any.
	savepoint *savepointConfig
}

// origin is what the job's manifests record as the savepoint it started
// from.
func (c *checkpointConfig) origin() string {
	if c.savepoint == nil {
		return ""
	}
	return c.savepoint.path
}

// checkpointOptions reads a job's checkpoint options; nil when the job
// asks for none. stateDir is where the default folder goes.
func checkpointOptions(j *Job, stateDir string) (*checkpointConfig, error) {
	opts, err := j.JobOptions()
	if err != nil {
		return nil, err
	}
	sp, err := savepointOptions(j)
	if err != nil {
		return nil, err
	}
	if opts.CheckpointInterval == 0 {
		return nil, nil
	}
	mode, err := checkpoint.ParseMode(opts.CheckpointMode)
	if err != nil {
		return nil, fmt.Errorf("option --%s: %w", CheckpointModeOption, err)
	}
	c := &checkpointConfig{savepoint: sp, keep: opts.CheckpointKeep, dir: opts.CheckpointDir, restore: opts.Restore,
		coord: checkpoint.Options{Interval: opts.CheckpointInterval, Timeout: opts.CheckpointTimeout,
			AlignedTimeout: opts.CheckpointAlignedTimeout, TolerableFailures: opts.CheckpointTolerableFailures, Mode: mode}}
	if c.dir == "" {
		c.dir = filepath.Join(stateDir, "jobs", safeName(jobFolder(j)), "checkpoints")
	}
	return c, nil
}

// jobFolder names a job's folder under the state dir: its name, so that
// the job submitted again under the same name (after a crash, or a restart
// of weir serve) finds its checkpoints; job ids (name-N) change with every
// submission. A job without a name uses its id, and so never restores by
// default. Two jobs running at once under one name share the folder and
// must not: give one another name or --weir_checkpoint_dir.
func jobFolder(j *Job) string {
	if j.Name != "" {
		return j.Name
	}
	return string(j.ID)
}

// safeName keeps a job id usable as one folder name.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
	if s == "" || s == "." || s == ".." {
		return "job"
	}
	return s
}

// jobCheckpoints runs a job's checkpoints: it is the graph's Checkpointer,
// owns the coordinator's driver and the goroutines that write snapshots.
type jobCheckpoints struct {
	j        *Job
	store    *state.Store
	storage  *checkpoint.Storage
	driver   *checkpoint.Driver
	barriers chan executor.BarrierID
	// namespaces returns the store namespaces a subtask owns.
	namespaces func(node, sub int) []string
	graph      *executor.Graph // told of completed checkpoints (commit.go)
	// shape names the graph's nodes, for the log of a declined checkpoint.
	shape []checkpoint.GraphNode

	mu     sync.Mutex
	writer *checkpoint.Writer // the checkpoint being written, if any
	snaps  map[snapKey]*state.Snapshot
	// writing holds, per subtask, a channel closed when its snapshot's
	// asynchronous part is done: a subtask that ends is reported only
	// after its acknowledgement.
	writing map[checkpoint.Task]chan struct{}
	async   sync.WaitGroup // snapshot writers
	// spDir is where the savepoint being taken goes ("" when none is
	// requested); spPath is where the last one went.
	spDir, spPath string
	// declined is the subtask whose snapshot failed last, and in which
	// checkpoint: the stage and subtask a failure's log record names.
	declined   checkpoint.Task
	declinedIn checkpoint.ID
	stop       context.CancelFunc
	done       chan struct{} // closed when the driver returns
	// fail fails the job: a panic on the driver's or a writer's goroutine
	// (panic.go).
	fail func(error)
}

type snapKey struct {
	node, sub int
	id        executor.BarrierID
}

// startCheckpoints starts a job's checkpoints on g; it returns nil when the
// job asks for none. fail is called with the error that fails the job (too
// many failed checkpoints). Call close when the graph has returned.
func startCheckpoints(j *Job, cfg *checkpointConfig, g *executor.Graph, store *state.Store,
	namespaces func(node, sub int) []string, fail func(error)) (*jobCheckpoints, error) {
	storage, err := checkpoint.OpenStorage(checkpoint.StorageOptions{Dir: cfg.dir, Keep: cfg.keep, Job: j.Name,
		Graph: cfg.graph, Origin: cfg.origin()})
	if err != nil {
		return nil, err
	}
	ids, err := storage.List()
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		cfg.coord.FirstID = ids[0] + 1
	}
	var tasks []checkpoint.Task
	for ni, n := range g.Nodes {
		for sub := range n.Parallelism {
			tasks = append(tasks, checkpoint.Task{Node: ni, Subtask: sub})
		}
	}
	coord, err := checkpoint.NewCoordinator(cfg.coord, tasks, time.Now())
	if err != nil {
		return nil, err
	}
	c := &jobCheckpoints{j: j, store: store, storage: storage, barriers: make(chan executor.BarrierID),
		namespaces: namespaces, snaps: map[snapKey]*state.Snapshot{}, done: make(chan struct{}), graph: g, shape: cfg.graph,
		writing: map[checkpoint.Task]chan struct{}{}, fail: fail}
	c.driver = checkpoint.NewDriver(checkpoint.DriverConfig{Coordinator: coord,
		Trigger: c.trigger, Store: c.commit, Abort: c.abort, Finished: c.finished})
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	goContained(contain.CheckpointDriver, fail, c.done, func() {
		contain.At(contain.CheckpointDriver, string(j.ID))
		if err := c.driver.Run(ctx); err != nil {
			fail(err)
		}
	})
	j.Metrics.AddSource(c.monitoringInfos)
	j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "checkpoints every %v (%v) into %s", cfg.coord.Interval, cfg.coord.Mode, cfg.dir)
	return c, nil
}

// close stops the driver, waits for the snapshot writers and drops what a
// checkpoint in flight wrote: it never completes now.
func (c *jobCheckpoints) close() {
	c.stop()
	<-c.done
	c.async.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, sn := range c.snaps {
		sn.Close()
		delete(c.snaps, k)
	}
	if c.writer != nil {
		c.writer.Abort()
		c.writer = nil
	}
}

// trigger prepares checkpoint id's folder and sends its barriers.
func (c *jobCheckpoints) trigger(ctx context.Context, id checkpoint.ID) error {
	w, err := c.storage.Begin(id)
	if err != nil {
		c.driver.Abandon(id, err)
		return nil
	}
	c.mu.Lock()
	if c.writer != nil {
		c.writer.Abort()
	}
	c.writer = w
	c.mu.Unlock()
	select {
	case c.barriers <- executor.BarrierID(id):
	case <-ctx.Done():
	}
	return nil
}

// SwitchAt implements executor.Checkpointer.
func (c *jobCheckpoints) SwitchAt(id executor.BarrierID) (time.Time, bool) {
	return c.driver.SwitchAt(checkpoint.ID(id))
}

// Snapshot implements executor.Checkpointer: the synchronous part is a
// Pebble snapshot of the store, taken once the operator has flushed what
// it buffers (Operator.Barrier ran first).
func (c *jobCheckpoints) Snapshot(node, sub int, id executor.BarrierID) error {
	if len(c.namespaces(node, sub)) == 0 {
		return nil
	}
	sn, err := c.store.Snapshot()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.snaps[snapKey{node, sub, id}] = sn
	c.mu.Unlock()
	return nil
}

// Done implements executor.Checkpointer: the asynchronous part writes the
// subtask's files while it runs on, then acknowledges.
func (c *jobCheckpoints) Done(r executor.BarrierRecord) {
	c.mu.Lock()
	k := snapKey{r.Node, r.Subtask, r.ID}
	sn := c.snaps[k]
	delete(c.snaps, k)
	w := c.writer
	if w == nil || w.ID() != checkpoint.ID(r.ID) {
		w = nil // the checkpoint is over (expired or failed)
	}
	task := checkpoint.Task{Node: r.Node, Subtask: r.Subtask}
	var written chan struct{}
	if w != nil {
		c.async.Add(1)
		written = make(chan struct{})
		c.writing[task] = written
	}
	c.mu.Unlock()
	if w == nil {
		if sn != nil {
			sn.Close()
		}
		return
	}
	goContained(contain.CheckpointWriter, c.fail, nil, func() {
		defer c.async.Done()
		defer close(written)
		contain.At(contain.CheckpointWriter, string(c.j.ID))
		ack, err := c.write(w, r, sn)
		if err != nil {
			c.mu.Lock()
			c.declined, c.declinedIn = task, checkpoint.ID(r.ID)
			c.mu.Unlock()
			c.driver.Decline(task, checkpoint.ID(r.ID), err)
			return
		}
		c.driver.Ack(ack)
	})
}

// subtaskMeta is what a manifest records of each subtask besides files.
type subtaskMeta struct {
	Records         int64  `json:"records,omitempty"`
	StateFile       string `json:"state_file,omitempty"`
	InFlightFile    string `json:"in_flight_file,omitempty"`
	Unaligned       bool   `json:"unaligned,omitempty"`
	AlignmentMicros int64  `json:"alignment_us,omitempty"`
	// Watermarks are the input watermark of each port, in milliseconds.
	Watermarks []int64 `json:"watermarks,omitempty"`
	// Channels are what the snapshot recorded of each input channel.
	Channels []channelMeta `json:"channels,omitempty"`
	// State is what the operator or source keeps outside the store (a
	// source's position).
	State []byte `json:"state,omitempty"`
}

// channelMeta is an executor.ChannelMark in milliseconds; a time that is
// not there (the start of time) is left out.
type channelMeta struct {
	Watermark              *int64 `json:"wm,omitempty"`
	ProcessingTime         *int64 `json:"pt,omitempty"`
	InFlightWatermark      *int64 `json:"in_flight_wm,omitempty"`
	InFlightProcessingTime *int64 `json:"in_flight_pt,omitempty"`
}

func channelMetaOf(m executor.ChannelMark) channelMeta {
	ms := func(t mtime.Time) *int64 {
		if t <= mtime.MinTimestamp {
			return nil
		}
		v := int64(t)
		return &v
	}
	return channelMeta{ms(m.Watermark), ms(m.ProcessingTime), ms(m.InFlightWatermark), ms(m.InFlightProcessingTime)}
}

func (m channelMeta) mark() executor.ChannelMark {
	t := func(ms *int64) mtime.Time {
		if ms == nil {
			return mtime.MinTimestamp
		}
		return mtime.Time(*ms)
	}
	return executor.ChannelMark{Watermark: t(m.Watermark), ProcessingTime: t(m.ProcessingTime),
		InFlightWatermark: t(m.InFlightWatermark), InFlightProcessingTime: t(m.InFlightProcessingTime)}
}

func (c *jobCheckpoints) write(w *checkpoint.Writer, r executor.BarrierRecord, sn *state.Snapshot) (checkpoint.Ack, error) {
	start := time.Now()
	base := fmt.Sprintf("n%d-s%d", r.Node, r.Subtask)
	meta := subtaskMeta{Unaligned: r.Unaligned, AlignmentMicros: r.Alignment.Microseconds(), State: r.State}
	for _, wm := range r.Watermarks {
		meta.Watermarks = append(meta.Watermarks, int64(wm))
	}
	for _, m := range r.Channels {
		meta.Channels = append(meta.Channels, channelMetaOf(m))
	}
	var bytes int64
	if sn != nil {
		name := base + ".sst"
		st, err := sn.Export(c.namespaces(r.Node, r.Subtask), func() (vfs.File, error) { return w.Create(name) })
		sn.Close()
		if err != nil {
			return checkpoint.Ack{}, err
		}
		if st.Records > 0 {
			meta.Records, meta.StateFile = st.Records, name
			n, _ := w.Size(name)
			bytes += n
		}
	}
	if len(r.InFlight) > 0 {
		meta.InFlightFile = base + ".inflight"
		if err := w.WriteFile(meta.InFlightFile, r.InFlight); err != nil {
			return checkpoint.Ack{}, err
		}
		bytes += int64(len(r.InFlight))
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return checkpoint.Ack{}, err
	}
	w.SetSubtask(checkpoint.Task{Node: r.Node, Subtask: r.Subtask}, b)
	return checkpoint.Ack{Task: checkpoint.Task{Node: r.Node, Subtask: r.Subtask}, ID: checkpoint.ID(r.ID),
		Arrival: r.Arrival, Alignment: r.Alignment, Sync: r.Sync, Async: time.Since(start),
		Bytes: bytes, InFlightBytes: int64(len(r.InFlight)), Unaligned: r.Unaligned}, nil
}

// Finished implements executor.Checkpointer. A subtask whose last
// snapshot is still being written is reported once it is acknowledged.
func (c *jobCheckpoints) Finished(node, sub int) {
	task := checkpoint.Task{Node: node, Subtask: sub}
	c.mu.Lock()
	written := c.writing[task]
	delete(c.writing, task)
	if written != nil {
		c.async.Add(1)
	}
	c.mu.Unlock()
	if written == nil {
		c.driver.Finished(task)
		return
	}
	goContained(contain.CheckpointEnded, c.fail, nil, func() {
		defer c.async.Done()
		<-written
		c.driver.Finished(task)
	})
}

// commit makes a checkpoint every subtask acknowledged visible.
func (c *jobCheckpoints) commit(_ context.Context, st checkpoint.Stats) error {
	c.mu.Lock()
	w := c.writer
	c.writer = nil
	c.mu.Unlock()
	if w == nil || w.ID() != st.ID {
		return fmt.Errorf("checkpoint %d has no folder", st.ID)
	}
	if st.Savepoint {
		w.MarkSavepoint()
	}
	sum := st.Summary()
	now := time.Now()
	ms := &checkpoint.ManifestStats{Trigger: st.Trigger, Duration: now.Sub(st.Trigger), Bytes: sum.Bytes,
		InFlightBytes: sum.InFlightBytes, UnalignedSubtasks: sum.UnalignedSubtasks, Subtasks: sum.AckedSubtasks}
	if err := w.Commit(now, ms); err != nil {
		w.Abort()
		return err
	}
	if st.Savepoint {
		// The checkpoint stays in the root, valid, should the copy fail:
		// only the savepoint fails.
		return c.copySavepoint(st.ID)
	}
	return nil
}

func (c *jobCheckpoints) abort(id checkpoint.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writer != nil && c.writer.ID() == id {
		c.writer.Abort()
		c.writer = nil
	}
}

func (c *jobCheckpoints) finished(st checkpoint.Stats) {
	sum := st.Summary()
	switch st.Status {
	case checkpoint.Completed:
		c.completed(st.ID)
		c.j.Logf(jobpb.JobMessage_JOB_MESSAGE_DETAILED, "checkpoint %d completed in %v: %d bytes, %d in flight, %d of %d subtasks unaligned",
			st.ID, st.Duration(time.Time{}).Round(time.Millisecond), sum.Bytes, sum.InFlightBytes, sum.UnalignedSubtasks, sum.TotalSubtasks)
	case checkpoint.Failed:
		args := []any{"checkpoint", uint64(st.ID), "savepoint", st.Savepoint}
		c.mu.Lock()
		if c.declinedIn == st.ID && c.declined.Node < len(c.shape) {
			args = append(args, logStage, c.shape[c.declined.Node].Name, logSubtask, c.declined.Subtask)
		}
		c.mu.Unlock()
		c.j.Warn("weir: checkpoint failed", fmt.Sprintf("checkpoint %d failed: %s", st.ID, st.Reason), args...)
	}
}

// defaultStateDir is where jobs keep what outlives them (checkpoints)
// unless the executor says otherwise.
func defaultStateDir() string { return filepath.Join(os.TempDir(), "weir") }
