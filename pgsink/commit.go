package pgsink

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/weir-runner/weir/twophase"
)

// epochOf names a committable: the run that prepared it and its epoch.
// Whether it is committed is a question about both: a restored job
// numbers its epochs again under a new run.
type epochOf struct {
	run   string
	epoch twophase.Epoch
}

// rowSource reads the staged rows of one epoch: fn gets each row's bytes
// and must not keep them.
type rowSource func(epoch twophase.Epoch, fn func(row []byte) error) error

// commit writes the staged rows of each epoch its run's marker does not
// cover, in one transaction with the markers that cover them after it. A
// run's marker M says every epoch of that run below M is in the table; the
// markers are read, and locked, in the transaction that writes, so a
// retry after a commit whose outcome was unknown (the reply lost), or a
// restored sink's commit of what its crashed run committed, writes
// nothing twice. It returns the rows written.
func (d *db) commit(ctx context.Context, es []epochOf, src rowSource, dec *rowDecoder) (int64, error) {
	tx, err := d.conn.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	marks, err := d.lockMarkers(ctx, tx, es)
	if err != nil {
		return 0, err
	}
	var todo []epochOf
	for _, e := range es {
		if e.epoch >= marks[e.run] {
			todo = append(todo, e)
			marks[e.run] = e.epoch + 1
		}
	}
	if len(todo) == 0 {
		return 0, nil
	}
	n, err := d.write(ctx, tx, todo, src, dec)
	if err != nil {
		return 0, err
	}
	for run, m := range marks {
		_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s SET epoch = $3, committed_at = now() WHERE sink = $1 AND run = $2 AND epoch < $3`,
			d.t.markers.Sanitize()), d.t.sink, run, int64(m))
		if err != nil {
			return 0, fmt.Errorf("move the marker of run %s: %w", run, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return n, nil
}

// lockMarkers returns the marker of each run of es, making a row for a
// run without one; the row stays locked until the transaction ends.
func (d *db) lockMarkers(ctx context.Context, tx pgx.Tx, es []epochOf) (map[string]twophase.Epoch, error) {
	marks := map[string]twophase.Epoch{}
	q := fmt.Sprintf(`INSERT INTO %s AS m (sink, run, epoch) VALUES ($1, $2, 0)
		ON CONFLICT (sink, run) DO UPDATE SET epoch = m.epoch RETURNING m.epoch`, d.t.markers.Sanitize())
	for _, e := range es {
		if _, ok := marks[e.run]; ok {
			continue
		}
		var m int64
		if err := tx.QueryRow(ctx, q, d.t.sink, e.run).Scan(&m); err != nil {
			return nil, fmt.Errorf("read the marker of run %s: %w", e.run, err)
		}
		marks[e.run] = twophase.Epoch(m)
	}
	return marks, nil
}

// write copies the rows of the epochs, in order: straight into the table
// to insert, or into the session's staging table to upsert from there.
func (d *db) write(ctx context.Context, tx pgx.Tx, es []epochOf, src rowSource, dec *rowDecoder) (int64, error) {
	var n, ord int64
	var rows [][]any
	for _, e := range es {
		rows = rows[:0]
		err := src(e.epoch, func(b []byte) error {
			vals := make([]any, 0, len(d.t.cols)+1)
			vals, err := dec.decode(b, vals)
			if err != nil {
				return permanent(fmt.Errorf("epoch %d: staged row %d: %w", e.epoch, len(rows), err))
			}
			if d.t.key != nil {
				ord++
				vals = append(vals, ord)
			}
			rows = append(rows, vals)
			return nil
		})
		if err != nil {
			return 0, err
		}
		if len(rows) == 0 {
			continue
		}
		into, cols := d.t.name, d.t.cols
		if d.t.key != nil {
			into, cols = pgx.Identifier{stageTable}, append(cols[:len(cols):len(cols)], ordColumn)
		}
		c, err := tx.CopyFrom(ctx, into, cols, pgx.CopyFromRows(rows))
		if err != nil {
			return 0, fmt.Errorf("copy %d rows of epoch %d into %s: %w", len(rows), e.epoch, into.Sanitize(), hint(err, d.t.name.Sanitize(), d.t.key != nil))
		}
		n += c
	}
	if d.t.key == nil || n == 0 {
		return n, nil
	}
	if _, err := tx.Exec(ctx, d.upsertSQL()); err != nil {
		return 0, fmt.Errorf("upsert %d rows into %s: %w", n, d.t.name.Sanitize(), hint(err, d.t.name.Sanitize(), d.t.key != nil))
	}
	return n, nil
}

// upsertSQL moves the staged rows into the table: the last row of each
// key (DISTINCT ON keeps the first of each key in the order given), which
// replaces the table's row of that key. ON CONFLICT may not touch one row
// twice in a statement, so the rows must be unique by key.
func (d *db) upsertSQL() string {
	q := func(names []string) string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = pgx.Identifier{n}.Sanitize()
		}
		return strings.Join(out, ", ")
	}
	var set []string
	for _, c := range d.t.cols {
		if !slices.Contains(d.t.key, c) {
			c := pgx.Identifier{c}.Sanitize()
			set = append(set, c+" = EXCLUDED."+c)
		}
	}
	action := "DO NOTHING"
	if len(set) > 0 {
		action = "DO UPDATE SET " + strings.Join(set, ", ")
	}
	return fmt.Sprintf(`INSERT INTO %s (%s) SELECT DISTINCT ON (%s) %s FROM %s ORDER BY %s, %s DESC ON CONFLICT (%s) %s`,
		d.t.name.Sanitize(), q(d.t.cols), q(d.t.key), q(d.t.cols), pgx.Identifier{stageTable}.Sanitize(),
		q(d.t.key), pgx.Identifier{ordColumn}.Sanitize(), q(d.t.key), action)
}
