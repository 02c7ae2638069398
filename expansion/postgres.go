package expansion

import (
	"errors"
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/pgio"
)

// PostgresWriteURN is weir's PostgreSQL write (package pgio), as other
// SDKs reach it: the request's payload is Beam's
// ExternalConfigurationPayload with the fields of pgio.WriteConfig, and
// the expansion is a composite over the runner-native transform of the
// same URN whose payload is the configuration's JSON.
const PostgresWriteURN = pgio.WriteURN

// pgWriteConfig maps the configuration row of a PostgreSQL write onto
// pgio.WriteConfig, reporting every problem at once. Fields:
//
//	connection string (required), table string (required),
//	mode string, key list of strings, columns map of strings to strings,
//	marker_table string, sink_id string
func pgWriteConfig(urn string, payload []byte) (*pgio.WriteConfig, error) {
	f, err := decodeFields(urn, payload)
	if err != nil {
		return nil, err
	}
	c := &pgio.WriteConfig{}
	var errs []error
	str := func(name string, dst *string) {
		v, _, err := f.string(name)
		if err != nil {
			errs = append(errs, err)
		}
		*dst = v
	}
	str("connection", &c.Connection)
	str("table", &c.Table)
	str("mode", &c.Mode)
	str("marker_table", &c.MarkerTable)
	str("sink_id", &c.SinkID)
	if c.Key, _, err = f.strings("key"); err != nil {
		errs = append(errs, err)
	}
	if c.Columns, _, err = f.stringMap("columns"); err != nil {
		errs = append(errs, err)
	}
	if err := f.unused(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", urn, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// checkRows makes sure a PostgreSQL write's input is a schema row, and
// that the configuration's renames and key fit its fields, so the
// pipeline's author hears of it at construction.
func checkRows(cfg *pgio.WriteConfig) func(c *pipepb.Components, pcoll string) error {
	return func(c *pipepb.Components, pcoll string) error {
		pc, ok := c.GetPcollections()[pcoll]
		if !ok {
			return fmt.Errorf("PCollection %q is not in the request's components", pcoll)
		}
		coder, ok := c.GetCoders()[pc.GetCoderId()]
		if !ok || coder.GetSpec().GetUrn() != urnRowCoder {
			return fmt.Errorf("PCollection %q has coder %s, want schema rows (%s): a NamedTuple or beam.Row in Python, a Row in Java",
				pcoll, describeCoder(c, pc.GetCoderId(), 0), urnRowCoder)
		}
		var s pipepb.Schema
		if err := unmarshalSchema(coder, &s); err != nil {
			return fmt.Errorf("PCollection %q: row coder: bad schema: %w", pcoll, err)
		}
		var fields []string
		for _, fd := range s.GetFields() {
			fields = append(fields, fd.GetName())
		}
		if _, err := cfg.ColumnsOf(fields); err != nil {
			return fmt.Errorf("PCollection %q: %w", pcoll, err)
		}
		return nil
	}
}
