package pgio

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/schema"
)

// Write adds a native PostgreSQL write of col, a PCollection of a struct
// type (or pointers to one): each element becomes a row of cfg.Table,
// each exported field a column (renamed by cfg.Columns; a `beam:"name"`
// tag names the field), whatever its window. The job must take
// checkpoints for rows to be written before its input ends (see
// docs/connectors.md). An invalid cfg or element type panics, as Beam's
// constructors do, naming what is wrong.
func Write(s beam.Scope, cfg WriteConfig, col beam.PCollection) {
	s = s.Scope("pgio.Write")
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("pgio.Write: %v", err))
	}
	if err := checkType(&cfg, col.Type().Type()); err != nil {
		panic(fmt.Sprintf("pgio.Write: %v", err))
	}
	payload, err := json.Marshal(&cfg)
	if err != nil {
		panic(fmt.Sprintf("pgio.Write: %v", err))
	}
	beam.External(s, WriteURN, payload, []beam.PCollection{col}, nil, false)
}

// checkType checks that t is a struct the Go SDK encodes as a portable
// row, and that cfg's key and renames name its fields.
func checkType(cfg *WriteConfig, t reflect.Type) error {
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return fmt.Errorf("writes a PCollection of structs (schema rows), not of %v", t)
	}
	// Beam Go's row coder writes int8, int16 and uint16 fields as varints,
	// not as the schema's BYTE and INT16 (one byte, two big-endian bytes)
	// that Java, Python and the runner read: refuse rather than corrupt.
	for f := range st.Fields() {
		if !f.IsExported() {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Int8, reflect.Int16, reflect.Uint16:
			return fmt.Errorf("field %s of %v is %v, which Beam Go does not encode portably; use int32", f.Name, st, f.Type)
		}
	}
	sch, err := schema.FromType(t)
	if err != nil {
		return fmt.Errorf("%v has no schema: %w", t, err)
	}
	var fields []string
	for _, f := range sch.GetFields() {
		fields = append(fields, f.GetName())
	}
	if _, err := cfg.ColumnsOf(fields); err != nil {
		return fmt.Errorf("%v: %w", t, err)
	}
	return nil
}
