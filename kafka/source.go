package kafka

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/watermarkmgr"
	"github.com/weir-runner/weir/wire"
)

// Source is the executor operator of a kafkaio read: one subtask of it.
// A read of several subtasks spreads its partitions over them
// (Options.Assign, Owner). Each subtask keeps per-partition watermarks and
// emits the minimum over its partitions that are neither idle nor ended;
// while they are all idle, or when it owns none, it tells its consumers it
// is idle (executor.Output.Status), so that they leave it out of their
// minimum instead of waiting for it. Its elements are KV<bytes, bytes>
// (key, value; a record without a key has an empty one), or with
// WithMetadata rows of kafkaio.MetadataSchema, in the global window at
// their event time.
type Source struct {
	Config  *kafkaio.ReadConfig
	Options ReaderOptions
	// Metrics, if set, reports the reader while it runs.
	Metrics *Metrics
	// Transform is the transform's ID, which labels its metrics.
	Transform string
	// Drain, if set, is closed when the job is drained. The read then
	// ends where it is, as a bounded read that reached its end does:
	// what it has read is emitted, its watermark goes to +inf so every
	// window downstream fires, and with CommitOffsetsInFinalize the
	// offsets it read are committed once the graph has ended.
	Drain <-chan struct{}

	// commits commits offsets with CommitOffsetsInFinalize (commit.go).
	commits *committer
}

var (
	_ executor.CheckpointListener = (*Source)(nil)
	_ executor.EndListener        = (*Source)(nil)
)

// Run implements executor.Source: it opens the reader (retrying until the
// brokers and topics are there), then emits each poll's records and every
// advance of the watermark, until a bounded read ends, the job is drained
// or ctx is cancelled.
func (s *Source) Run(ctx context.Context, out *executor.Output, inj *executor.Injector) error {
	opts := s.Options
	if opts.Assign.Of > 1 {
		// Each subtask is a reader of its own in the alignment group, the
		// metrics and the job's messages.
		opts.Name = fmt.Sprintf("%s[%d]", opts.Name, opts.Assign.Index)
	}
	var restored []byte
	if b := inj.Restored(); b != nil {
		var pos Position
		if err := json.Unmarshal(b, &pos); err != nil {
			return fmt.Errorf("kafka source %s: restore position %q: %w", opts.Name, b, err)
		}
		opts.Resume, restored = &pos, b
	}
	// Until the reader is open, a snapshot records the restored position,
	// or none: nothing has been read.
	var r *Reader
	if s.Config.CommitOffsetsInFinalize {
		s.commits = newCommitter(s.Config, opts)
	}
	inj.OnSnapshot(func() ([]byte, error) {
		if r == nil {
			return restored, nil
		}
		pos := r.Position()
		if s.commits != nil {
			s.commits.snapshot(inj.Barrier(), pos)
		}
		return json.Marshal(pos)
	})
	if _, err := inj.Poll(); err != nil {
		return err
	}
	// A drain while the reader waits for the brokers ends the read with
	// nothing read.
	octx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		select {
		case <-s.Drain:
			stop(errDrained)
		case <-octx.Done():
		}
	}()
	r, err := Open(octx, s.Config, opts)
	if err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(octx), errDrained) {
			return s.end(ctx, out, inj, nil)
		}
		return err
	}
	defer r.Close()
	if s.Metrics != nil {
		s.Metrics.add(s.Transform, r)
	}
	// A reader that owns no partition says so before it first polls.
	if r.Status() == watermarkmgr.StatusIdle {
		if err := out.Status(ctx, watermarkmgr.StatusIdle); err != nil {
			return err
		}
	}
	coalesce := coalescing(s.Config)
	for !r.Done() {
		if _, err := inj.Poll(); err != nil {
			return err
		}
		if s.drained() {
			if err := r.Stop(); err != nil {
				return err
			}
			break
		}
		recs, err := r.Poll(ctx)
		if err != nil {
			return err
		}
		// Active goes out before the records and watermark it brings,
		// idle after the last watermark before it.
		status := r.Status()
		if status == watermarkmgr.StatusActive {
			if err := out.Status(ctx, status); err != nil {
				return err
			}
		}
		if len(recs) > 0 {
			encode := encodeRecords
			if s.Config.WithMetadata {
				encode = encodeMetadataRecords
			}
			if err := out.Emit(ctx, 0, encode(recs)); err != nil {
				return err
			}
		}
		// An advance held back goes with the next poll after the consumer
		// took the last one (at most PollWait later), and before an idle
		// status in any case.
		if !coalesce || status == watermarkmgr.StatusIdle || !out.WatermarkQueued() {
			if wm, ok := r.Watermark(); ok {
				if err := out.Watermark(ctx, wm); err != nil {
					return err
				}
			}
		}
		if status == watermarkmgr.StatusIdle {
			if err := out.Status(ctx, status); err != nil {
				return err
			}
		}
	}
	return s.end(ctx, out, inj, r)
}

// coalescing reports whether the read holds watermark advances back while
// a consumer has the last one queued (CoalesceWatermarks, default true).
func coalescing(c *kafkaio.ReadConfig) bool {
	return c.CoalesceWatermarks == nil || *c.CoalesceWatermarks
}

// errDrained is the cause of a read's context when the job is drained.
var errDrained = errors.New("kafka: job drained")

// drained reports whether the job is being drained.
func (s *Source) drained() bool {
	select {
	case <-s.Drain:
		return true
	default:
		return false
	}
}

// end ends the read: the watermark goes to +inf, and the offsets r read
// (none if r is nil) are the ones to commit when the graph ends.
func (s *Source) end(ctx context.Context, out *executor.Output, inj *executor.Injector, r *Reader) error {
	if _, err := inj.Poll(); err != nil {
		return err
	}
	if err := out.Watermark(ctx, mtime.MaxTimestamp); err != nil {
		return err
	}
	if s.commits != nil && r != nil {
		pos := r.Position()
		s.commits.final = &pos
	}
	return nil
}

// CheckpointComplete implements executor.CheckpointListener: with
// CommitOffsetsInFinalize it commits the offsets of the source's snapshot
// of checkpoint id (commit.go). It runs in the source's goroutine.
func (s *Source) CheckpointComplete(ctx context.Context, id executor.BarrierID) error {
	if s.commits != nil {
		s.commits.completed(ctx, id)
	}
	return nil
}

// GraphEnded implements executor.EndListener: with
// CommitOffsetsInFinalize, a graph that ended without error commits the
// read's final offsets.
func (s *Source) GraphEnded(ctx context.Context, err error) error {
	if s.commits == nil {
		return nil
	}
	c := s.commits
	s.commits = nil
	return c.end(ctx, err)
}

// noFiring is the pane of elements a source emits.
var noFiring = []byte{wire.PaneNoFiring}

// encodeRecords makes windowed KV<bytes, bytes> values of records, in one
// new buffer: the records' own bytes belong to the reader.
func encodeRecords(recs []Record) [][]byte {
	size := 0
	for _, r := range recs {
		size += 8 + 4 + 1 + 2*binary.MaxVarintLen64 + len(r.Key) + len(r.Value)
	}
	buf := make([]byte, 0, size)
	out := make([][]byte, len(recs))
	var kv []byte
	for i, r := range recs {
		kv = appendBytes(appendBytes(kv[:0], r.Key), r.Value)
		start := len(buf)
		buf = wire.AppendWindowedValue(buf, r.EventTime, nil, noFiring, kv)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// appendBytes appends b as Beam's bytes coder writes it nested: its
// length, then the bytes.
func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// Metrics collects the readers of a job's Kafka sources for its metrics.
type Metrics struct {
	mu      sync.Mutex
	readers map[string][]*Reader // by transform ID
	groups  *Groups
}

// NewMetrics returns an empty collection; groups, if set, adds each
// alignment group's spread.
func NewMetrics(groups *Groups) *Metrics {
	return &Metrics{readers: map[string][]*Reader{}, groups: groups}
}

// add adds a reader of a source transform; it replaces the reader of
// the same subtask of an earlier run of the graph (a job restarted in
// this process), whose figures are over.
func (m *Metrics) add(transform string, r *Reader) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.readers[transform]
	for i, old := range rs {
		if old.opts.Assign.Index == r.opts.Assign.Index {
			rs[i] = r
			return
		}
	}
	m.readers[transform] = append(rs, r)
}
