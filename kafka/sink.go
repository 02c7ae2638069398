package kafka

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/wire"
)

// Sink is the executor operator of a kafkaio write: it produces each
// KV<bytes, bytes> element as a record (key, value) to the topic, whatever
// its window, and flushes at every barrier and at the end of its input, so
// that what a checkpoint covers is in Kafka (at least once).
type Sink struct {
	Writer *Writer
	// In decodes the input's windowed values.
	In *wire.Codec
}

// Process implements executor.Operator.
func (s *Sink) Process(ctx context.Context, _ int, elems [][]byte) error {
	for _, e := range elems {
		v, err := s.In.ValueOf(e)
		if err != nil {
			return fmt.Errorf("kafka sink %s: %w", s.Writer.name, err)
		}
		key, n, err := readBytes(v)
		if err != nil {
			return fmt.Errorf("kafka sink %s: key: %w", s.Writer.name, err)
		}
		val, _, err := readBytes(v[n:])
		if err != nil {
			return fmt.Errorf("kafka sink %s: value: %w", s.Writer.name, err)
		}
		// The batch may be reused once Process returns; the record lives
		// until it is acknowledged.
		s.Writer.Write(ctx, clone(key), clone(val))
	}
	return nil
}

// readBytes reads a nested bytes value: its length, then the bytes.
func readBytes(b []byte) ([]byte, int, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, 0, wire.ErrShort
	}
	end := k + int(n)
	return b[k:end], end, nil
}

// clone copies b; nil stays nil so that an empty key is no key.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// Watermark implements executor.Operator: a sink has no output.
func (s *Sink) Watermark(context.Context, int, mtime.Time) error { return nil }

// Barrier implements executor.Operator.
func (s *Sink) Barrier(ctx context.Context, _ executor.BarrierID) error {
	return s.Writer.Flush(ctx)
}

// Finish implements executor.Operator.
func (s *Sink) Finish(ctx context.Context) error {
	defer s.Writer.Close()
	return s.Writer.Flush(ctx)
}
