package kafka

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/joboptions"
	"github.com/weir-runner/weir/jobview"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/twophase"
)

// ReadConnector runs kafkaio.ReadURN: a read of every partition of its
// topics, as the configured number of subtasks (Source), each reading the
// partitions Owner gives it.
type ReadConnector struct{}

// WriteConnector runs kafkaio.WriteURN: a write on every subtask, each
// with its own producer, at least once (Sink) or exactly once (TxnSink
// under a twophase.Driver).
type WriteConnector struct{}

var (
	_ connector.Connector = ReadConnector{}
	_ connector.Connector = WriteConnector{}
)

// urnRowCoder is Beam's row coder, of a read's output WithMetadata.
const urnRowCoder = "beam:coder:row:v1"

// URN implements connector.Connector.
func (ReadConnector) URN() string { return kafkaio.ReadURN }

// Decode implements connector.Connector: the payload, and an output of
// KV<bytes, bytes> (rows of kafkaio.MetadataSchema WithMetadata) in the
// global window.
func (ReadConnector) Decode(t *connector.Transform) (connector.Config, []error) {
	cfg, err := kafkaio.DecodeRead(t.Payload())
	if err != nil {
		return nil, []error{err}
	}
	if err := t.Ports("a Kafka read", 0, 1, 1); err != nil {
		return nil, []error{err}
	}
	out := t.Outputs()[0]
	check := t.CheckKVBytes
	if cfg.WithMetadata {
		check = func(pc string) error { return metadataRows(t, pc) }
	}
	var errs []error
	if err := check(out); err != nil {
		errs = append(errs, fmt.Errorf("output: %w", err))
	}
	if err := t.CheckGlobalWindow(out); err != nil {
		errs = append(errs, err)
	}
	if errs != nil {
		return nil, errs
	}
	return &readStage{cfg: cfg}, nil
}

// URN implements connector.Connector.
func (WriteConnector) URN() string { return kafkaio.WriteURN }

// Decode implements connector.Connector: the payload, and an input of
// KV<bytes, bytes>. weir's expansion gives the write an output no
// transform reads (expansion.WrittenTag), so that Python's
// pre-optimization keeps it.
func (WriteConnector) Decode(t *connector.Transform) (connector.Config, []error) {
	cfg, err := kafkaio.DecodeWrite(t.Payload())
	if err != nil {
		return nil, []error{err}
	}
	if err := t.Ports("a Kafka write", 1, 0, 1); err != nil {
		return nil, []error{err}
	}
	for _, out := range t.Outputs() {
		if r := t.ReaderOf(out); r != "" {
			return nil, []error{fmt.Errorf("output PCollection %q is read by transform %q, but a Kafka write outputs nothing", out, r)}
		}
	}
	if err := t.CheckKVBytes(t.Inputs()[0]); err != nil {
		return nil, []error{fmt.Errorf("input: %w", err)}
	}
	return &writeStage{cfg: cfg}, nil
}

// metadataRows checks that a PCollection's coder is a row coder of
// kafkaio.MetadataSchema, the rows a read WithMetadata produces. Schema
// ids and options may differ (an SDK may re-id the schema it was given);
// field names, order and types may not.
func metadataRows(t *connector.Transform, pcoll string) error {
	pc, err := t.PColl(pcoll)
	if err != nil {
		return err
	}
	c := t.Coder(pc.GetCoderId())
	if c.GetSpec().GetUrn() != urnRowCoder {
		return fmt.Errorf("PCollection %q has coder %q (%s), not a row of Kafka records (with_metadata)", pcoll, pc.GetCoderId(), t.DescribeCoder(pc.GetCoderId()))
	}
	var got pipepb.Schema
	if err := proto.Unmarshal(c.GetSpec().GetPayload(), &got); err != nil {
		return fmt.Errorf("PCollection %q: row coder %q: bad schema: %w", pcoll, pc.GetCoderId(), err)
	}
	if err := sameFields(&got, kafkaio.MetadataSchema()); err != nil {
		return fmt.Errorf("PCollection %q: row coder %q is not of Kafka records (with_metadata): %w", pcoll, pc.GetCoderId(), err)
	}
	return nil
}

// sameFields compares two schemas' fields by name, order and type, not
// by ids or options.
func sameFields(got, want *pipepb.Schema) error {
	if len(got.GetFields()) != len(want.GetFields()) {
		return fmt.Errorf("%d fields, want %d", len(got.GetFields()), len(want.GetFields()))
	}
	for i, w := range want.GetFields() {
		g := got.GetFields()[i]
		if g.GetName() != w.GetName() {
			return fmt.Errorf("field %d is %q, want %q", i, g.GetName(), w.GetName())
		}
		if err := sameType(g.GetType(), w.GetType()); err != nil {
			return fmt.Errorf("field %s: %w", w.GetName(), err)
		}
	}
	return nil
}

func sameType(got, want *pipepb.FieldType) error {
	if got.GetNullable() != want.GetNullable() {
		return fmt.Errorf("nullable %v, want %v", got.GetNullable(), want.GetNullable())
	}
	switch {
	case want.GetRowType() != nil:
		if got.GetRowType() == nil {
			return errors.New("not a row")
		}
		return sameFields(got.GetRowType().GetSchema(), want.GetRowType().GetSchema())
	case want.GetArrayType() != nil:
		if got.GetArrayType() == nil {
			return errors.New("not an array")
		}
		return sameType(got.GetArrayType().GetElementType(), want.GetArrayType().GetElementType())
	case got.GetAtomicType() != want.GetAtomicType() || got.GetAtomicType() == pipepb.AtomicType_UNSPECIFIED:
		return fmt.Errorf("type %v, want %v", got.GetTypeInfo(), want.GetTypeInfo())
	}
	return nil
}

// readStage is a decoded Kafka read.
type readStage struct {
	cfg *kafkaio.ReadConfig
	// jobDefault is the job's source parallelism, 0 when it sets none.
	jobDefault int
}

// DefaultParallelism implements connector.Parallel.
func (r *readStage) DefaultParallelism(n int) { r.jobDefault = n }

// Config returns the read's configuration.
func (r *readStage) Config() *kafkaio.ReadConfig { return r.cfg }

// Placement implements connector.Config: the read's parallelism, one
// subtask unless its configuration or the job's source parallelism asks
// for more. Each subtask emits the
// minimum over its own partitions and says in-band when they are all idle
// (or it owns none), so its consumers' minimum over subtasks is the
// minimum over partitions that one subtask would compute.
//
// Not the job's parallelism by default: the read's parallelism is part of
// the job's shape, and a checkpoint taken with one reading subtask, as
// every one before 2026-12-02 was, would be refused by a job reading with
// more (docs/decisions.md).
func (r *readStage) Placement() connector.Placement {
	return connector.Placement{Parallelism: r.parallelism()}
}

// parallelism returns the number of subtasks the read runs as: its
// configuration's, else the job's, else one.
func (r *readStage) parallelism() int {
	if r.cfg.Parallelism > 0 {
		return r.cfg.Parallelism
	}
	return max(r.jobDefault, 1)
}

// Build implements connector.Config.
func (r *readStage) Build(b *connector.BuildContext) (connector.Node, error) {
	cfg := r.cfg
	if unknown := UnknownConsumerKeys(cfg); len(unknown) > 0 {
		sort.Strings(unknown)
		b.Job.Warnf("kafka source %s: consumer_config keys %s are not used by weir", b.Stage, strings.Join(unknown, ", "))
	}
	if cfg.CommitOffsetsInFinalize && !cfg.Bounded() && !b.Job.Checkpoints() {
		b.Job.Warnf("kafka source %s: commit_offset_in_finalize commits group %q's offsets when a checkpoint completes or the read ends; this unbounded read in a job without --%s commits none until it ends",
			b.Stage, cfg.ConsumerConfig["group.id"], joboptions.CheckpointInterval)
	}
	job := shared(b.Job)
	onError := b.Job.Retried()
	n := r.parallelism()
	budgets := &runBudgets{records: cfg.MaxRecords, subtasks: n}
	// A new Source for every run of the graph: it keeps the offsets it
	// has still to commit.
	return connector.Node{NewSource: func(sub int, _ *executor.Output) (executor.Source, error) {
		opts := ReaderOptions{Name: b.Stage, Groups: job.groups, OnError: onError}
		if n > 1 {
			opts.Assign = Assignment{Index: sub, Of: n}
		}
		if cfg.MaxRecords > 0 {
			opts.Budget = budgets.get(sub)
		}
		return &Source{Config: cfg, Transform: b.Transform, Metrics: job.metrics, Drain: b.Job.Drain(), Options: opts}, nil
	}}, nil
}

// runBudgets hands the subtasks of one run of the graph a Budget of their
// own: a restarted graph counts afresh from its checkpoint. A subtask
// asking again starts the next run.
type runBudgets struct {
	records  int64
	subtasks int

	mu    sync.Mutex
	cur   *Budget
	given map[int]bool
}

func (b *runBudgets) get(sub int) *Budget {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil || b.given[sub] {
		b.cur, b.given = NewBudget(b.records, b.subtasks), map[int]bool{}
	}
	b.given[sub] = true
	return b.cur
}

// writeStage is a decoded Kafka write.
type writeStage struct{ cfg *kafkaio.WriteConfig }

// Config returns the write's configuration.
func (w *writeStage) Config() *kafkaio.WriteConfig { return w.cfg }

// Placement implements connector.Config: an exactly-once write keeps its
// records in the store until they are committed.
func (w *writeStage) Placement() connector.Placement {
	return connector.Placement{Store: w.cfg.IsExactlyOnce()}
}

// Build implements connector.Config. An exactly-once write needs
// checkpoints: without them its records would wait for the end of the
// input, forever in a streaming job, so the job is refused.
func (w *writeStage) Build(b *connector.BuildContext) (connector.Node, error) {
	cfg := w.cfg
	if len(b.Inputs) != 1 {
		return connector.Node{}, fmt.Errorf("kafka sink %s: %d inputs, want 1", b.Stage, len(b.Inputs))
	}
	in := b.Inputs[0].Codec
	if unknown := UnknownProducerKeys(cfg); len(unknown) > 0 {
		sort.Strings(unknown)
		b.Job.Warnf("kafka sink %s: producer_config keys %s are not used by weir", b.Stage, strings.Join(unknown, ", "))
	}
	if !cfg.IsExactlyOnce() {
		return connector.Node{NewOperator: func(sub int, _ *executor.Output) (executor.Operator, error) {
			w, err := NewWriter(cfg, WriterOptions{Name: fmt.Sprintf("%s[%d]", b.Stage, sub), OnError: b.Job.Retried()})
			if err != nil {
				return nil, err
			}
			return &Sink{Writer: w, In: in}, nil
		}}, nil
	}
	if !b.Job.Checkpoints() {
		return connector.Node{}, fmt.Errorf("kafka sink %s: semantic %q needs checkpoints: set --%s (or write at least once)",
			b.Stage, cfg.Semantic, joboptions.CheckpointInterval)
	}
	// Not the job's name by default: Go pipelines name jobs with a
	// timestamp, so a restored job would look for its marker under another
	// group and commit again. A second job writing with the same id fences
	// the first, which then fails loudly; markers of another run are told
	// apart by the run token.
	prefix := cfg.TransactionalID
	if prefix == "" {
		prefix = "weir-" + cfg.Topic + "-" + b.Stage
	}
	return connector.Node{NewOperator: func(sub int, _ *executor.Output) (executor.Operator, error) {
		name := fmt.Sprintf("%s[%d]", b.Stage, sub)
		tw, err := NewTxnWriter(cfg, TxnOptions{Name: name, TransactionalID: fmt.Sprintf("%s-%d", prefix, sub)})
		if err != nil {
			return nil, err
		}
		return &twophase.Driver{Sink: &TxnSink{Writer: tw, In: in},
			Pending: twophase.NewPending(b.Store, b.Namespace(sub), name),
			Name:    fmt.Sprintf("kafka sink %s: topic %q", name, cfg.Topic), OnRetry: b.Job.Retried()}, nil
	}}, nil
}

// jobShared is what a job's Kafka stages share: its alignment groups,
// which may span several sources, and the metrics of its readers.
type jobShared struct {
	groups  *Groups
	metrics *Metrics
}

type sharedKey struct{}

// shared returns the job's Kafka state, made (and its metrics and splits
// added to the job) by the first Kafka stage built.
func shared(job connector.Job) *jobShared {
	return job.Shared(sharedKey{}, func() any {
		groups := NewGroups()
		s := &jobShared{groups: groups, metrics: NewMetrics(groups)}
		job.AddMetrics(s.metrics.MonitoringInfos)
		job.AddSplits(splitView{s.metrics})
		return s
	}).(*jobShared)
}

// splitView shows the job's Kafka readers' partitions and alignment
// groups in the job's view.
type splitView struct{ m *Metrics }

// Splits implements connector.SplitReporter.
func (v splitView) Splits(now time.Time) []jobview.Partition {
	var parts []jobview.Partition
	for _, src := range v.m.Sources() {
		for _, p := range src.Partitions {
			jp := jobview.Partition{Source: src.Transform, Subtask: src.Subtask, Topic: p.Topic, Partition: p.Partition,
				Watermark: int64(p.Watermark), Next: p.Next, Consumed: p.Read, Lag: p.Lag, Paused: p.Paused, Idle: p.Idle}
			if p.Lag > 0 && !p.LastTimestamp.IsZero() {
				jp.LagSeconds = max(now.Sub(p.LastTimestamp).Seconds(), 0)
			}
			parts = append(parts, jp)
		}
	}
	return parts
}

// Alignments implements connector.SplitReporter.
func (v splitView) Alignments() []jobview.Alignment {
	var groups []jobview.Alignment
	for name, a := range v.m.Alignments() {
		groups = append(groups, jobview.Alignment{Group: name, Bound: int64(a.Bound),
			Spread: a.Spread().Seconds(), Paused: a.Paused})
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Group < groups[j].Group })
	return groups
}
