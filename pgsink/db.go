package pgsink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxRuns bounds the runs whose markers are kept per sink id: a restore to
// a checkpoint of a run no longer kept would commit its committables
// again. Each run is one row, so the bound is generous; every start of a
// job is a run.
const maxRuns = 100

// defaultConnectTimeout bounds a connection attempt whose connection
// string sets none: a server that does not answer is retried, not waited
// for forever.
const defaultConnectTimeout = 10 * time.Second

// table is what the sink writes, as SQL.
type table struct {
	name    pgx.Identifier // the table written
	cols    []string       // its columns, one per field, in field order
	key     []string       // the upsert's conflict target; nil to insert
	markers pgx.Identifier // the marker table
	sink    string         // this subtask's id in the marker table
}

// stageTable is the upsert's session-local staging table; its order
// column keeps arrival order, so the last row of a key wins.
const (
	stageTable = "weir_upsert_stage"
	ordColumn  = "weir ord"
)

// db is a sink subtask's connection, opened and re-opened as needed.
type db struct {
	cfg  *pgx.ConnConfig
	t    *table
	conn *pgx.Conn
}

// connect opens the connection unless it is open, and for an upsert
// makes the session's staging table.
func (d *db) connect(ctx context.Context) error {
	if d.conn != nil && !d.conn.IsClosed() {
		return nil
	}
	d.conn = nil
	c, err := pgx.ConnectConfig(ctx, d.cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if d.t.key != nil {
		cols := make([]string, len(d.t.cols))
		for i, c := range d.t.cols {
			cols[i] = pgx.Identifier{c}.Sanitize()
		}
		q := fmt.Sprintf(`CREATE TEMP TABLE %s ON COMMIT DELETE ROWS AS SELECT %s, 0::bigint AS %s FROM %s WITH NO DATA`,
			pgx.Identifier{stageTable}.Sanitize(), strings.Join(cols, ", "), pgx.Identifier{ordColumn}.Sanitize(), d.t.name.Sanitize())
		if _, err := c.Exec(ctx, q); err != nil {
			c.Close(ctx)
			return fmt.Errorf("make the upsert's staging table: %w", err)
		}
	}
	d.conn = c
	return nil
}

// drop closes the connection; the next call reconnects.
func (d *db) drop() {
	if d.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		d.conn.Close(ctx)
		cancel()
		d.conn = nil
	}
}

// check checks, once, what the sink needs of the database: the table
// exists, with the columns written, a unique index on the key for an
// upsert, and the privileges; and it makes the marker table if missing
// and drops the markers of old runs. Its errors are Permanent when the
// database answered.
func (d *db) check(ctx context.Context) error {
	var oid uint32
	var kind string
	var insert, update bool
	err := d.conn.QueryRow(ctx, `SELECT c.oid, c.relkind::text, has_table_privilege(c.oid, 'INSERT'), has_table_privilege(c.oid, 'UPDATE')
		FROM pg_class c WHERE c.oid = to_regclass($1)`, d.t.name.Sanitize()).Scan(&oid, &kind, &insert, &update)
	if errors.Is(err, pgx.ErrNoRows) {
		return permanentf("table %s does not exist", d.t.name.Sanitize())
	}
	if err != nil {
		return fmt.Errorf("look up table %s: %w", d.t.name.Sanitize(), err)
	}
	if kind != "r" && kind != "p" {
		return permanentf("%s is not a table (relkind %q)", d.t.name.Sanitize(), kind)
	}
	if !insert || (d.t.key != nil && !update) {
		return permanentf("the connection's user may not INSERT%s into table %s", map[bool]string{true: " and UPDATE"}[d.t.key != nil], d.t.name.Sanitize())
	}
	if err := d.checkColumns(ctx, oid); err != nil {
		return err
	}
	if d.t.key != nil {
		if err := d.checkKey(ctx, oid); err != nil {
			return err
		}
	}
	return d.prepareMarkers(ctx)
}

func (d *db) checkColumns(ctx context.Context, oid uint32) error {
	rows, err := d.conn.Query(ctx, `SELECT attname::text FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, oid)
	if err != nil {
		return fmt.Errorf("read the columns of %s: %w", d.t.name.Sanitize(), err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("read the columns of %s: %w", d.t.name.Sanitize(), err)
	}
	var missing []string
	for _, c := range d.t.cols {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return permanentf("table %s has no column %q (it has %q; a field goes to the column of its name, or of its name in columns)", d.t.name.Sanitize(), missing, have)
	}
	return nil
}

// checkKey finds a unique index (or primary key) on exactly the key
// columns, without a predicate: ON CONFLICT (key) needs one.
func (d *db) checkKey(ctx context.Context, oid uint32) error {
	var n int
	err := d.conn.QueryRow(ctx, `SELECT count(*) FROM pg_index i
		WHERE i.indrelid = $1 AND i.indisunique AND i.indpred IS NULL AND i.indnkeyatts = cardinality($2::text[])
		AND (SELECT array_agg(a.attname::text) FROM pg_attribute a
		     WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey[0:i.indnkeyatts-1])) @> $2::text[]`, oid, d.t.key).Scan(&n)
	if err != nil {
		return fmt.Errorf("read the unique indexes of %s: %w", d.t.name.Sanitize(), err)
	}
	if n == 0 {
		return permanentf("table %s has no unique index or primary key on exactly the key columns %q, which an upsert (ON CONFLICT) needs", d.t.name.Sanitize(), d.t.key)
	}
	return nil
}

// prepareMarkers makes the marker table if missing, and drops the
// markers of all but this sink's newest runs. An advisory lock
// serializes sinks that make the table at once (CREATE TABLE IF NOT
// EXISTS can fail on a race otherwise).
func (d *db) prepareMarkers(ctx context.Context) error {
	m := d.t.markers.Sanitize()
	return pgx.BeginFunc(ctx, d.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, m); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
			sink text NOT NULL,
			run text NOT NULL,
			epoch bigint NOT NULL,
			committed_at timestamptz NOT NULL DEFAULT now(),
			PRIMARY KEY (sink, run))`, m))
		if err != nil {
			return fmt.Errorf("make marker table %s: %w", m, err)
		}
		_, err = tx.Exec(ctx, fmt.Sprintf(`DELETE FROM %[1]s WHERE sink = $1 AND run NOT IN
			(SELECT run FROM %[1]s WHERE sink = $1 ORDER BY committed_at DESC LIMIT %[2]d)`, m, maxRuns), d.t.sink)
		if err != nil {
			return fmt.Errorf("drop old markers from %s: %w", m, err)
		}
		return nil
	})
}

func permanentf(format string, args ...any) error {
	return permanent(fmt.Errorf(format, args...))
}
