package kafka

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/wire"
)

// TxnSink is the executor operator of an exactly-once kafkaio write
// (package twophase has the protocol). Records wait in the job's store,
// by epoch, until a checkpoint that covers them completes; then they are
// written in one Kafka transaction with a marker. It implements
// executor.CheckpointListener.
type TxnSink struct {
	Writer  *TxnWriter
	Pending *twophase.Pending
	// In decodes the input's windowed values.
	In *wire.Codec
	// OnError hears each failed commit that is retried; nil drops them.
	OnError func(error)

	started bool
	run     string
	epoch   executor.BarrierID // the open epoch: the newest barrier seen
	marker  executor.BarrierID // every epoch below is committed
	batch   [][]byte
	// Committed counts the records written, for tests and metrics.
	Committed int
}

// start recovers once, before anything else: a sink over a store restored
// from checkpoint N commits the epochs sealed by N unless the marker says
// the crashed run committed them. On a fresh store it commits nothing.
func (s *TxnSink) start(ctx context.Context) error {
	if s.started {
		return nil
	}
	run, err := s.Pending.Run()
	if err != nil {
		return err
	}
	sealed, err := s.Pending.Sealed()
	if err != nil {
		return err
	}
	s.started, s.run, s.epoch = true, run, sealed
	return s.commit(ctx, sealed)
}

// Process implements executor.Operator: it keeps the batch in the open
// epoch, as the record's key and value (the element's KV value).
func (s *TxnSink) Process(ctx context.Context, _ int, elems [][]byte) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	s.batch = s.batch[:0]
	for _, e := range elems {
		v, err := s.In.ValueOf(e)
		if err != nil {
			return fmt.Errorf("kafka sink %s: %w", s.Writer.name, err)
		}
		if _, _, err := splitKV(v); err != nil {
			return fmt.Errorf("kafka sink %s: %w", s.Writer.name, err)
		}
		s.batch = append(s.batch, v)
	}
	return s.Pending.Append(s.epoch, s.batch)
}

// splitKV splits a KV<bytes, bytes> value into key and value.
func splitKV(v []byte) (key, val []byte, err error) {
	key, n, err := readBytes(v)
	if err != nil {
		return nil, nil, fmt.Errorf("key: %w", err)
	}
	val, _, err = readBytes(v[n:])
	if err != nil {
		return nil, nil, fmt.Errorf("value: %w", err)
	}
	return key, val, nil
}

// Watermark implements executor.Operator: a sink has no output.
func (s *TxnSink) Watermark(context.Context, int, mtime.Time) error { return nil }

// Barrier implements executor.Operator: the pre-commit. Epochs below id
// are sealed, and the snapshot taken next holds them.
func (s *TxnSink) Barrier(ctx context.Context, id executor.BarrierID) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	if id <= s.epoch {
		return nil
	}
	s.epoch = id
	return s.Pending.Seal(id)
}

// CheckpointComplete implements executor.CheckpointListener: it commits
// every epoch below id.
func (s *TxnSink) CheckpointComplete(ctx context.Context, id executor.BarrierID) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	return s.commit(ctx, id)
}

// Finish implements executor.Operator: at the end of the input every
// epoch is committed, the open one too, since no checkpoint will follow.
func (s *TxnSink) Finish(ctx context.Context) error {
	defer s.Writer.Close()
	if err := s.start(ctx); err != nil {
		return err
	}
	return s.commit(ctx, s.epoch+1)
}

// commit commits the epochs below bound, retrying transient failures, and
// drops what is committed from the store.
func (s *TxnSink) commit(ctx context.Context, bound executor.BarrierID) error {
	if bound > s.marker {
		what := fmt.Sprintf("kafka sink %s: topic %q: commit of checkpoint %d", s.Writer.name, s.Writer.topic, bound)
		err := twophase.Retry(ctx, what, func(ctx context.Context) error { return s.commitOnce(ctx, bound) }, s.OnError)
		if err != nil {
			return err
		}
	}
	return s.Pending.Delete(s.marker)
}

// commitOnce reads the marker and writes what it does not cover. Reading
// it every time makes a retry after a commit whose outcome was unknown
// (the reply lost) write nothing twice.
func (s *TxnSink) commitOnce(ctx context.Context, bound executor.BarrierID) error {
	m, err := s.Writer.Marker(ctx, s.run)
	if err != nil {
		return err
	}
	p := twophase.PlanCommit(max(m, s.marker), bound)
	if p.Write {
		n, err := s.Writer.Commit(ctx, s.run, p.To, func(produce func(key, value []byte)) error {
			return s.Pending.Read(p.From, p.To, func(_ executor.BarrierID, v []byte) error {
				key, val, err := splitKV(v)
				if err != nil {
					return twophase.Permanent(err)
				}
				produce(key, val)
				return nil
			})
		})
		if err != nil {
			return err
		}
		s.Committed += n
	}
	s.marker = p.Marker
	return nil
}
