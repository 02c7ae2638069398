package pgio

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// WriteURN is the URN of weir's native PostgreSQL write; its payload is
// the JSON of WriteConfig. weir's expansion service serves the same URN
// to other SDKs, with Beam's ExternalConfigurationPayload as payload.
const WriteURN = "beam:transform:weir:postgres_write:v1"

// Modes of a write.
const (
	// ModeInsert inserts every row; a row that breaks a constraint (a
	// duplicate key) fails the job.
	ModeInsert = "insert"
	// ModeUpsert inserts a row, or updates the row of the table with the
	// same key (INSERT ... ON CONFLICT (key) DO UPDATE): the last row of a
	// key wins, in the order of the epochs and, within one, of arrival.
	ModeUpsert = "upsert"
)

// DefaultMarkerTable is the table of commit markers, in the schema of
// the written table, when WriteConfig.MarkerTable is empty.
const DefaultMarkerTable = "weir_sink_markers"

// maxIdent is PostgreSQL's longest identifier (NAMEDATALEN - 1 bytes);
// the server would truncate a longer one silently.
const maxIdent = 63

// WriteConfig configures a PostgreSQL write.
type WriteConfig struct {
	// Connection is a libpq connection string or URL
	// ("postgres://user@host:5432/db?sslmode=verify-full"). What it
	// omits comes, as with libpq, from the runner's environment (PGHOST,
	// PGUSER, PGPASSWORD...) and ~/.pgpass: keep passwords there, not in
	// the pipeline, which the job service shows. Required.
	Connection string `json:"connection"`
	// Table is the table written, "name" or "schema.name", each part an
	// identifier taken as written (case kept, no quotes needed). It must
	// exist. Required.
	Table string `json:"table"`
	// Mode is ModeInsert (the default) or ModeUpsert.
	Mode string `json:"mode,omitempty"`
	// Key lists the columns of the upsert's conflict target: the table
	// must have a unique index or constraint on exactly these columns.
	// Required for ModeUpsert, refused for ModeInsert.
	Key []string `json:"key,omitempty"`
	// Columns renames fields: field name to column name. A field it does
	// not name goes to the column of its own name.
	Columns map[string]string `json:"columns,omitempty"`
	// MarkerTable is where the sink keeps its commit markers, "name" or
	// "schema.name"; default DefaultMarkerTable in Table's schema (or the
	// search path's, for an unqualified Table). Created if missing.
	MarkerTable string `json:"marker_table,omitempty"`
	// SinkID names the sink's markers; default "TABLE/TRANSFORM NAME".
	// Markers are per run (a random token), so two sinks sharing an id do
	// not mix their commits; the id lets a person find a sink's markers.
	SinkID string `json:"sink_id,omitempty"`
}

// Validate reports what is wrong with the configuration, every problem at
// once. It needs no database.
func (c *WriteConfig) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Connection) == "" {
		errs = append(errs, errors.New("no connection"))
	}
	if _, err := SplitName(c.Table); err != nil {
		errs = append(errs, fmt.Errorf("table: %w", err))
	}
	if c.MarkerTable != "" {
		if _, err := SplitName(c.MarkerTable); err != nil {
			errs = append(errs, fmt.Errorf("marker_table: %w", err))
		}
	}
	switch c.Mode {
	case "", ModeInsert:
		if len(c.Key) > 0 {
			errs = append(errs, fmt.Errorf("key %q is for mode %q; mode %q inserts every row", c.Key, ModeUpsert, ModeInsert))
		}
	case ModeUpsert:
		if len(c.Key) == 0 {
			errs = append(errs, fmt.Errorf("mode %q needs key columns", ModeUpsert))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown mode %q: want %q or %q", c.Mode, ModeInsert, ModeUpsert))
	}
	errs = append(errs, checkNames("key column", c.Key)...)
	cols := make([]string, 0, len(c.Columns))
	for f, col := range c.Columns {
		if f == "" {
			errs = append(errs, fmt.Errorf("columns: an empty field name is renamed to %q", col))
		}
		cols = append(cols, col)
	}
	slices.Sort(cols)
	errs = append(errs, checkNames("columns: column", cols)...)
	return errors.Join(errs...)
}

// checkNames checks identifiers: not empty, not too long, no repeats.
func checkNames(what string, names []string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, n := range names {
		if err := checkIdent(n); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", what, n, err))
		}
		if seen[n] {
			errs = append(errs, fmt.Errorf("%s %q appears twice", what, n))
		}
		seen[n] = true
	}
	return errs
}

func checkIdent(s string) error {
	switch {
	case s == "":
		return errors.New("empty name")
	case len(s) > maxIdent:
		return fmt.Errorf("longer than PostgreSQL's %d bytes", maxIdent)
	case strings.ContainsRune(s, 0):
		return errors.New("holds a NUL byte")
	}
	return nil
}

// SplitName splits "schema.name" or "name" into its identifiers.
func SplitName(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("%q: want name or schema.name", s)
	}
	for _, p := range parts {
		if err := checkIdent(p); err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
	}
	return parts, nil
}

// IsUpsert reports whether the write upserts.
func (c *WriteConfig) IsUpsert() bool { return c.Mode == ModeUpsert }

// Column returns the column of a field.
func (c *WriteConfig) Column(field string) string {
	if col, ok := c.Columns[field]; ok {
		return col
	}
	return field
}

// ColumnsOf returns the column of each field, in order, and checks that
// the renames name fields, that no two fields share a column, and that
// the key columns are written.
func (c *WriteConfig) ColumnsOf(fields []string) ([]string, error) {
	var errs []error
	cols := make([]string, len(fields))
	byCol := map[string]string{}
	for i, f := range fields {
		cols[i] = c.Column(f)
		if prev, dup := byCol[cols[i]]; dup {
			errs = append(errs, fmt.Errorf("fields %q and %q both go to column %q", prev, f, cols[i]))
		}
		byCol[cols[i]] = f
		if err := checkIdent(cols[i]); err != nil {
			errs = append(errs, fmt.Errorf("column %q of field %q: %w", cols[i], f, err))
		}
	}
	renamed := make([]string, 0, len(c.Columns))
	for f := range c.Columns {
		if !slices.Contains(fields, f) {
			renamed = append(renamed, f)
		}
	}
	slices.Sort(renamed)
	for _, f := range renamed {
		errs = append(errs, fmt.Errorf("columns renames %q, which is not a field (fields %q)", f, fields))
	}
	for _, k := range c.Key {
		if _, ok := byCol[k]; !ok {
			errs = append(errs, fmt.Errorf("key column %q is not written: the columns are %q", k, cols))
		}
	}
	return cols, errors.Join(errs...)
}

// Markers returns the marker table's name parts, with its default.
func (c *WriteConfig) Markers() []string {
	if c.MarkerTable != "" {
		parts, _ := SplitName(c.MarkerTable)
		return parts
	}
	parts, _ := SplitName(c.Table)
	return append(parts[:len(parts)-1:len(parts)-1], DefaultMarkerTable)
}

// DecodeWrite decodes and validates a WriteURN payload.
func DecodeWrite(payload []byte) (*WriteConfig, error) {
	var c WriteConfig
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("postgres write payload: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("postgres write: %w", err)
	}
	return &c, nil
}
