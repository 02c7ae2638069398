package kafka

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/wire"
)

// TxnSink is the twophase.Sink of an exactly-once kafkaio write (a
// twophase.Driver runs it). Records wait in the store's staging area, by
// epoch, until a checkpoint that covers them completes; then they are
// written in one Kafka transaction with the run's marker, an offset commit
// that says which epochs of which runs are in the topic (TxnWriter,
// Markers).
type TxnSink struct {
	Writer *TxnWriter
	// In decodes the input's windowed values.
	In *wire.Codec

	staging twophase.Staging
	count   int // records in the open epoch
	batch   [][]byte
	// Committed counts the records written, for tests and metrics.
	Committed int
}

var _ twophase.Sink = (*TxnSink)(nil)

// Open implements twophase.Sink.
func (s *TxnSink) Open(_ context.Context, ss twophase.Session) error {
	s.staging = ss.Staging
	return nil
}

// Abort implements twophase.Sink. A crashed run's records never left the
// store, but its producer may have left a transaction open, which holds
// back read_committed consumers until it times out: connecting
// initialises the producer id, which fences and aborts it.
func (s *TxnSink) Abort(ctx context.Context, _ []twophase.Committable) error {
	return s.Writer.connect(ctx)
}

// Write implements twophase.Sink: it stages the batch, as the records'
// keys and values (the elements' KV values).
func (s *TxnSink) Write(_ context.Context, epoch twophase.Epoch, elems [][]byte) error {
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
	s.count += len(s.batch)
	return s.staging.Append(epoch, s.batch)
}

// Prepare implements twophase.Sink: the records are in the store already;
// the committable is their count.
func (s *TxnSink) Prepare(context.Context, twophase.Epoch) ([]byte, error) {
	n := s.count
	s.count = 0
	return binary.AppendUvarint(nil, uint64(n)), nil
}

// Commit implements twophase.Sink: one transaction writes the staged
// records of every committable its run's marker does not cover, and moves
// those runs' markers past them. Reading the markers each time makes a
// retry after a commit whose outcome was unknown (the reply lost), or a
// restored sink's commit of what its crashed run committed, write
// nothing twice.
func (s *TxnSink) Commit(ctx context.Context, cs []twophase.Committable) error {
	ms, err := s.Writer.Markers(ctx)
	if err != nil {
		return err
	}
	var todo []twophase.Committable
	for _, c := range cs {
		if c.Epoch >= ms.Of(c.Run) {
			todo = append(todo, c)
			ms = ms.With(c.Run, c.Epoch+1)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	n, err := s.Writer.Commit(ctx, ms, func(produce func(key, value []byte)) error {
		for _, c := range todo {
			err := s.staging.Read(c.Epoch, c.Epoch+1, func(_ twophase.Epoch, v []byte) error {
				key, val, err := splitKV(v)
				if err != nil {
					return twophase.Permanent(err)
				}
				produce(key, val)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.Committed += n
	return nil
}

// Close implements twophase.Sink; nothing is open between commits.
func (s *TxnSink) Close() error {
	s.Writer.Close()
	return nil
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
