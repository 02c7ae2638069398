package expansion

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// A configuration row is decoded here, by its schema, rather than with the
// Go SDK's schema and row coder (xlangx.DecodeStructPayload), which a bad
// request could use against the server: it allocates whatever size a count
// in the row claims (a 287-byte payload asked for a map of 805 million
// entries and ran the process out of memory, found fuzzing), it panics on
// some schemas, and it builds a Go type per schema with reflect.StructOf,
// which the runtime never frees. This decoder reads the row coder as
// beam_runner_api.proto specifies it (StandardCoders.ROW), bounds every
// count by the bytes left, and bounds nesting.

// Decoded values: nil (null), bool, uint8 (BYTE), int64 (INT32, INT64),
// float64 (DOUBLE), string, []byte, []any (ARRAY, ITERABLE), []mapEntry
// (MAP, in the row's order) and *row (ROW).
type mapEntry struct{ k, v any }

type row struct {
	fields []*pipepb.Field
	values []any
}

// maxDepth bounds how deeply types nest: a configuration is a flat row of
// scalars, lists and maps.
const maxDepth = 16

// maxValues bounds the values (fields of rows, elements of lists and maps)
// one payload decodes to. Counts are bounded by the bytes left, but a row
// of few bytes may stand for many fields (missing ones are null), so the
// bytes alone do not bound memory.
const maxValues = 1 << 20

type rowDecoder struct {
	b      []byte
	values int // decoded or allocated so far, up to maxValues
}

// take counts n more values against maxValues.
func (d *rowDecoder) take(n int) error {
	if d.values += n; d.values > maxValues {
		return fmt.Errorf("more than %d values", maxValues)
	}
	return nil
}

var errShort = errors.New("row ends early")

// decodeRow decodes one row with schema s and refuses trailing bytes.
func decodeRow(s *pipepb.Schema, b []byte) (*row, error) {
	d := &rowDecoder{b: b}
	r, err := d.row(s, 0)
	if err != nil {
		return nil, err
	}
	if len(d.b) > 0 {
		return nil, fmt.Errorf("%d bytes after the row", len(d.b))
	}
	return r, nil
}

func (d *rowDecoder) row(s *pipepb.Schema, depth int) (*row, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("types nest more than %d deep", maxDepth)
	}
	order, err := encodingOrder(s)
	if err != nil {
		return nil, err
	}
	n, err := d.uvarint()
	if err != nil {
		return nil, fmt.Errorf("field count: %w", err)
	}
	// Fewer fields than the schema's are allowed (columns added since the
	// row was written are null); more are not.
	if n > uint64(len(order)) {
		return nil, fmt.Errorf("row has %d fields, its schema %d", n, len(order))
	}
	nulls, err := d.bytes()
	if err != nil {
		return nil, fmt.Errorf("null bitmap: %w", err)
	}
	fs := s.GetFields()
	if err := d.take(len(fs)); err != nil {
		return nil, err
	}
	r := &row{fields: fs, values: make([]any, len(fs))}
	for pos, i := range order {
		if uint64(pos) >= n || isNull(nulls, pos) {
			continue
		}
		v, err := d.value(fs[i].GetType(), depth+1)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fs[i].GetName(), err)
		}
		r.values[i] = v
	}
	return r, nil
}

// encodingOrder returns the schema's field indexes in the order the row
// encodes them: by encoding_position when the schema sets them.
func encodingOrder(s *pipepb.Schema) ([]int, error) {
	fs := s.GetFields()
	order := make([]int, len(fs))
	for i := range order {
		order[i] = i
	}
	if !s.GetEncodingPositionsSet() {
		return order, nil
	}
	seen := make([]bool, len(fs))
	for i, f := range fs {
		p := f.GetEncodingPosition()
		if p < 0 || int(p) >= len(fs) || seen[p] {
			return nil, fmt.Errorf("field %s: encoding position %d is not a position among %d fields", f.GetName(), p, len(fs))
		}
		seen[p] = true
		order[p] = i
	}
	return order, nil
}

func isNull(bits []byte, i int) bool {
	return i/8 < len(bits) && bits[i/8]>>(i%8)&1 == 1
}

// value decodes one value of type t, which is not null at the top of a
// row (the bitmap said so) but may be inside a container.
func (d *rowDecoder) value(t *pipepb.FieldType, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("types nest more than %d deep", maxDepth)
	}
	switch ti := t.GetTypeInfo().(type) {
	case *pipepb.FieldType_AtomicType:
		return d.atomic(ti.AtomicType)
	case *pipepb.FieldType_ArrayType:
		return d.iterable(ti.ArrayType.GetElementType(), depth)
	case *pipepb.FieldType_IterableType:
		return d.iterable(ti.IterableType.GetElementType(), depth)
	case *pipepb.FieldType_MapType:
		return d.mapOf(ti.MapType, depth)
	case *pipepb.FieldType_RowType:
		return d.row(ti.RowType.GetSchema(), depth)
	case *pipepb.FieldType_LogicalType:
		// Encoded as its representation.
		return d.value(ti.LogicalType.GetRepresentation(), depth+1)
	}
	return nil, fmt.Errorf("field type %v is not one weir decodes", t.GetTypeInfo())
}

// element decodes a value inside an array or a map: a nullable one is
// preceded by a null indicator byte.
func (d *rowDecoder) element(t *pipepb.FieldType, depth int) (any, error) {
	if t.GetNullable() {
		b, err := d.byte()
		if err != nil {
			return nil, err
		}
		switch b {
		case 0:
			return nil, nil
		case 1:
		default:
			return nil, fmt.Errorf("null indicator %#x, want 0 or 1", b)
		}
	}
	return d.value(t, depth)
}

func (d *rowDecoder) atomic(t pipepb.AtomicType) (any, error) {
	switch t {
	case pipepb.AtomicType_BYTE:
		return d.byte()
	case pipepb.AtomicType_INT32, pipepb.AtomicType_INT64:
		return d.varint()
	case pipepb.AtomicType_DOUBLE:
		if len(d.b) < 8 {
			return nil, errShort
		}
		v := math.Float64frombits(binary.BigEndian.Uint64(d.b))
		d.b = d.b[8:]
		return v, nil
	case pipepb.AtomicType_STRING:
		b, err := d.bytes()
		return string(b), err
	case pipepb.AtomicType_BOOLEAN:
		b, err := d.byte()
		if err == nil && b > 1 {
			err = fmt.Errorf("boolean %#x, want 0 or 1", b)
		}
		return b == 1, err
	case pipepb.AtomicType_BYTES:
		b, err := d.bytes()
		return slices.Clone(b), err
	}
	// INT16 and FLOAT have no standard coder yet, and the SDKs encode them
	// differently (Go as a varint, Java as fixed-width): no configuration
	// field weir reads has either.
	return nil, fmt.Errorf("atomic type %v has no standard encoding", t)
}

// iterable reads beam:coder:iterable:v1: a big-endian int32 count and the
// elements, or -1 and blocks of elements, each counted by a varint, ended
// by a zero count.
func (d *rowDecoder) iterable(elem *pipepb.FieldType, depth int) ([]any, error) {
	n, err := d.int32()
	if err != nil {
		return nil, err
	}
	if n >= 0 {
		return d.elements(make([]any, 0, min(int(n), len(d.b))), int64(n), elem, depth)
	}
	if n != -1 {
		return nil, fmt.Errorf("iterable count %d", n)
	}
	out := []any{}
	for {
		m, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return out, nil
		}
		if m > uint64(len(d.b)) {
			return nil, fmt.Errorf("block of %d elements in %d bytes", m, len(d.b))
		}
		if out, err = d.elements(out, int64(m), elem, depth); err != nil {
			return nil, err
		}
	}
}

// elements appends n elements to out. Every encoding takes a byte at
// least, so a count larger than the bytes left is refused before anything
// is allocated for it.
func (d *rowDecoder) elements(out []any, n int64, elem *pipepb.FieldType, depth int) ([]any, error) {
	if n > int64(len(d.b)) {
		return nil, fmt.Errorf("%d elements in %d bytes", n, len(d.b))
	}
	if err := d.take(int(n)); err != nil {
		return nil, err
	}
	for range n {
		v, err := d.element(elem, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// mapOf reads a map: a big-endian int32 count, then keys and values.
func (d *rowDecoder) mapOf(t *pipepb.MapType, depth int) ([]mapEntry, error) {
	n, err := d.int32()
	if err != nil {
		return nil, err
	}
	if n < 0 || int64(n) > int64(len(d.b)) {
		return nil, fmt.Errorf("map of %d entries in %d bytes", n, len(d.b))
	}
	if err := d.take(2 * int(n)); err != nil {
		return nil, err
	}
	out := make([]mapEntry, 0, n)
	for range n {
		k, err := d.element(t.GetKeyType(), depth+1)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		v, err := d.element(t.GetValueType(), depth+1)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		out = append(out, mapEntry{k, v})
	}
	return out, nil
}

func (d *rowDecoder) byte() (uint8, error) {
	if len(d.b) < 1 {
		return 0, errShort
	}
	b := d.b[0]
	d.b = d.b[1:]
	return b, nil
}

func (d *rowDecoder) int32() (int32, error) {
	if len(d.b) < 4 {
		return 0, errShort
	}
	v := int32(binary.BigEndian.Uint32(d.b))
	d.b = d.b[4:]
	return v, nil
}

func (d *rowDecoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, errors.New("bad varint")
	}
	d.b = d.b[n:]
	return v, nil
}

// varint reads beam:coder:varint:v1: a signed integer as the unsigned
// varint of its two's complement, not zigzag.
func (d *rowDecoder) varint() (int64, error) {
	v, err := d.uvarint()
	return int64(v), err
}

// bytes reads a varint length and that many bytes, which stay in the
// payload's buffer.
func (d *rowDecoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) {
		return nil, fmt.Errorf("%d bytes claimed, %d left", n, len(d.b))
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b, nil
}
