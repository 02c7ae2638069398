package pgsink

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/wire"
)

// Sink is the twophase.Sink of a PostgreSQL write (a twophase.Driver runs
// it). PostgreSQL cannot keep a transaction open across a crash of the
// client (the server aborts it when the connection ends; PREPARE
// TRANSACTION is off by default), so rows wait in the store's staging
// area, by epoch, until the checkpoint that covers them completes; then
// one transaction writes them with the run's marker (commit.go).
type Sink struct {
	// Name names the sink subtask and its table in errors.
	Name string
	// OnRetry hears each failed connection attempt at Open that is
	// retried; nil drops them. Backoff is the wait before each retry;
	// default twophase.Backoff.
	OnRetry func(error)
	Backoff func(int) time.Duration
	// Committed counts the rows written, for tests.
	Committed int64

	// in decodes the input's windowed values; each value is a row,
	// length-prefixed on the runner's edges (the runner cannot measure a
	// row coder). rows decodes the rows, table says where they go, conn
	// how to connect. Plan.NewSink sets them.
	in    *wire.Codec
	rows  *rowDecoder
	table *table
	conn  *pgx.ConnConfig

	db      *db
	staging twophase.Staging
	count   int // rows in the open epoch
	batch   [][]byte
	vals    []any
}

var _ twophase.Sink = (*Sink)(nil)

// Open implements twophase.Sink: it connects, retrying while the server
// cannot be reached, and checks the table (check). A missing table, column
// or key index, or a refused login, fails the job at once.
func (s *Sink) Open(ctx context.Context, ss twophase.Session) error {
	s.staging = ss.Staging
	cfg := s.conn.Copy()
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	s.db = &db{cfg: cfg, t: s.table}
	backoff := s.Backoff
	if backoff == nil {
		backoff = twophase.Backoff
	}
	return twophase.RetryWith(ctx, "connect and check the table", backoff, func(ctx context.Context) error {
		err := s.db.connect(ctx)
		if err == nil {
			err = s.db.check(ctx)
		}
		return s.failed(err)
	}, s.OnRetry)
}

// failed classifies err, dropping the connection if it is broken.
func (s *Sink) failed(err error) error {
	err, reconnect := classify(err)
	if reconnect {
		s.db.drop()
	}
	return err
}

// Abort implements twophase.Sink. Nothing of this sink outlives a crash
// outside the store: the server aborted the crashed run's transaction
// when its connection ended.
func (s *Sink) Abort(context.Context, []twophase.Committable) error { return nil }

// Write implements twophase.Sink: it checks that each element is a row
// it can write and stages the rows. A row that does not decode fails the
// job here, before a checkpoint holds it.
func (s *Sink) Write(_ context.Context, epoch twophase.Epoch, elems [][]byte) error {
	s.batch = s.batch[:0]
	for _, e := range elems {
		v, err := s.in.ValueOf(e)
		if err != nil {
			return fmt.Errorf("element: %w", err)
		}
		row, n, err := lengthPrefixed(v)
		if err == nil && n != len(v) {
			err = fmt.Errorf("%d bytes after the row", len(v)-n)
		}
		if err != nil {
			return fmt.Errorf("element: not a length-prefixed row: %w", err)
		}
		if s.vals, err = s.rows.decode(row, s.vals[:0]); err != nil {
			return fmt.Errorf("element: %w", err)
		}
		s.batch = append(s.batch, row)
	}
	s.count += len(s.batch)
	return s.staging.Append(epoch, s.batch)
}

// Prepare implements twophase.Sink: the rows are in the store already;
// the committable is their count.
func (s *Sink) Prepare(context.Context, twophase.Epoch) ([]byte, error) {
	n := s.count
	s.count = 0
	return binary.AppendUvarint(nil, uint64(n)), nil
}

// Commit implements twophase.Sink: one transaction writes the staged rows
// of every committable its run's marker does not cover (commit.go). A
// connection lost is retried by the Driver, after reconnecting; an error
// about the data or the table is Permanent.
func (s *Sink) Commit(ctx context.Context, cs []twophase.Committable) error {
	if err := s.db.connect(ctx); err != nil {
		return s.failed(err)
	}
	es := make([]epochOf, len(cs))
	for i, c := range cs {
		es[i] = epochOf{run: c.Run, epoch: c.Epoch}
	}
	src := func(epoch twophase.Epoch, fn func([]byte) error) error {
		return s.staging.Read(epoch, epoch+1, func(_ twophase.Epoch, v []byte) error { return fn(v) })
	}
	n, err := s.db.commit(ctx, es, src, s.rows)
	if err != nil {
		return s.failed(err)
	}
	s.Committed += n
	return nil
}

// Close implements twophase.Sink.
func (s *Sink) Close() error {
	if s.db != nil {
		s.db.drop()
	}
	return nil
}
