package pgsink

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/pgio"
	"github.com/weir-runner/weir/wire"
)

// Plan is a PostgreSQL write checked and decoded at submission: the
// configuration, the parsed connection string, the row schema compiled,
// the column of each field. It needs no database; Build makes each
// subtask's Sink from it.
type Plan struct {
	Config *pgio.WriteConfig
	// Transform names the transform; the default sink id holds it.
	Transform string

	conn *pgx.ConnConfig
	rows *rowDecoder
	cols []string
}

// NewPlan checks a write of rows of coder (the input PCollection's) with
// the configuration in payload, reporting every problem it finds.
func NewPlan(payload []byte, coder *pipepb.Coder, transform string) (*Plan, []error) {
	cfg, err := pgio.DecodeWrite(payload)
	if err != nil {
		return nil, []error{err}
	}
	p := &Plan{Config: cfg, Transform: transform}
	var errs []error
	if p.conn, err = pgx.ParseConfig(cfg.Connection); err != nil {
		// pgx's message quotes the connection string, its password
		// redacted.
		errs = append(errs, fmt.Errorf("postgres write: connection: %w", err))
	}
	schema, err := rowSchema(coder)
	if err != nil {
		return nil, append(errs, err)
	}
	rows, rerrs := newRowDecoder(schema)
	for _, e := range rerrs {
		errs = append(errs, fmt.Errorf("postgres write: input row: %w", e))
	}
	if rows != nil {
		p.rows = rows
		p.cols, err = cfg.ColumnsOf(rows.names)
		if err != nil {
			errs = append(errs, fmt.Errorf("postgres write: %w", err))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// rowSchema returns the schema of a row coder.
func rowSchema(c *pipepb.Coder) (*pipepb.Schema, error) {
	if urn := c.GetSpec().GetUrn(); urn != URNRowCoder {
		return nil, fmt.Errorf("postgres write: the input's coder is %s, not a schema row (%s): write rows (Go structs, Python NamedTuples or beam.Row, Java Rows)", urn, URNRowCoder)
	}
	var s pipepb.Schema
	if err := proto.Unmarshal(c.GetSpec().GetPayload(), &s); err != nil {
		return nil, fmt.Errorf("postgres write: the input's row coder has a bad schema: %w", err)
	}
	return &s, nil
}

// Columns returns the column of each field, in field order.
func (p *Plan) Columns() []string { return append([]string(nil), p.cols...) }

// SinkID returns the id of subtask's markers.
func (p *Plan) SinkID(subtask int) string {
	id := p.Config.SinkID
	if id == "" {
		id = p.Config.Table + "/" + p.Transform
	}
	return fmt.Sprintf("%s[%d]", id, subtask)
}

// NewSink returns subtask's sink; stage names it in errors, in decodes
// its input, onRetry hears connection attempts that are retried.
func (p *Plan) NewSink(stage string, subtask int, in *wire.Codec, onRetry func(error)) *Sink {
	name, _ := pgio.SplitName(p.Config.Table)
	var key []string
	if p.Config.IsUpsert() {
		key = p.Config.Key
	}
	return &Sink{
		Name:    fmt.Sprintf("postgres sink %s[%d]: table %s", stage, subtask, pgx.Identifier(name).Sanitize()),
		OnRetry: onRetry,
		in:      in, rows: p.rows, conn: p.conn,
		table: &table{name: name, cols: p.cols, key: key, markers: p.Config.Markers(), sink: p.SinkID(subtask)},
	}
}
