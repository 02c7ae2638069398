package pgsink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"
	"unicode/utf8"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/jackc/pgx/v5/pgtype"
)

// URNRowCoder is Beam's schema row coder, the element coder a PostgreSQL
// write takes.
const URNRowCoder = "beam:coder:row:v1"

// Logical types the decoder reads by URN; any other logical type is read
// as its representation when that is atomic.
const (
	urnMillisInstant = "beam:logical_type:millis_instant:v1"
	urnMicrosInstant = "beam:logical_type:micros_instant:v1"
	urnDecimal       = "beam:logical_type:decimal:v1"
)

// A row in Beam's row coding (beam:coder:row:v1), as Java's and Python's
// row coders write it:
//
//	uvarint field count; the null bitmap as bytes (uvarint length, then
//	bit i of byte i/8 set for a null field i; length 0 when none is null);
//	then each non-null field in schema order.
//
// A count below the schema's leaves the last fields null (a row of an
// older schema, as Java reads it). Field encodings, and the Go value each
// becomes for pgx:
//
//	BYTE     one byte                        int16 (0..255)
//	INT16    two bytes, big-endian           int16
//	INT32    uvarint of its 32 bits          int32
//	INT64    uvarint of its 64 bits          int64
//	FLOAT    IEEE 754, 4 bytes big-endian    float32
//	DOUBLE   IEEE 754, 8 bytes big-endian    float64
//	STRING   uvarint length, UTF-8           string
//	BOOLEAN  one byte, 0 or 1                bool
//	BYTES    uvarint length, bytes           []byte
//	millis_instant  Java's InstantCoder: 8 bytes big-endian, millis with
//	                the sign bit flipped    time.Time (UTC)
//	micros_instant  a row {seconds INT64, micros INT64}  time.Time (UTC)
//	decimal  uvarint scale, then the unscaled value as uvarint length and
//	         big-endian two's complement bytes (Java's BigDecimalCoder,
//	         Python's DecimalCoder)  pgtype.Numeric
//	other logical types: their representation, when it is atomic
//
// Arrays, iterables, maps and nested rows are refused when the decoder is
// made, naming the field: they have no column type to go to yet.

// fieldDecoder decodes one non-null field from the front of b, returning
// its value and length.
type fieldDecoder func(b []byte) (any, int, error)

// rowDecoder decodes the rows of one schema.
type rowDecoder struct {
	names    []string
	nullable []bool
	decs     []fieldDecoder
	// order lists field indexes in the order the fields are encoded: by
	// encoding position when the schema sets them (Java's and Python's
	// coders honour them), else field order.
	order []int
}

// newRowDecoder compiles a schema, reporting every field it cannot
// decode.
func newRowDecoder(s *pipepb.Schema) (*rowDecoder, []error) {
	d := &rowDecoder{}
	var errs []error
	if len(s.GetFields()) == 0 {
		return nil, []error{errors.New("the row schema has no fields")}
	}
	for _, f := range s.GetFields() {
		dec, err := decoderFor(f.GetType())
		if err != nil {
			errs = append(errs, fmt.Errorf("field %q: %w", f.GetName(), err))
			continue
		}
		d.names = append(d.names, f.GetName())
		d.nullable = append(d.nullable, f.GetType().GetNullable())
		d.decs = append(d.decs, dec)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	order, err := encodingOrder(s)
	if err != nil {
		return nil, []error{err}
	}
	d.order = order
	return d, nil
}

// encodingOrder returns the field indexes in encoding order.
func encodingOrder(s *pipepb.Schema) ([]int, error) {
	n := len(s.GetFields())
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if !s.GetEncodingPositionsSet() {
		return order, nil
	}
	seen := make([]bool, n)
	for i, f := range s.GetFields() {
		p := f.GetEncodingPosition()
		if p < 0 || int(p) >= n || seen[p] {
			return nil, fmt.Errorf("the row schema's encoding positions are not a permutation of its %d fields (field %q at %d)", n, f.GetName(), p)
		}
		seen[p] = true
		order[p] = i
	}
	return order, nil
}

func decoderFor(t *pipepb.FieldType) (fieldDecoder, error) {
	switch ti := t.GetTypeInfo().(type) {
	case *pipepb.FieldType_AtomicType:
		return atomicDecoder(ti.AtomicType)
	case *pipepb.FieldType_LogicalType:
		lt := ti.LogicalType
		switch lt.GetUrn() {
		case urnMillisInstant:
			return decodeMillisInstant, nil
		case urnMicrosInstant:
			return decodeMicrosInstant, nil
		case urnDecimal:
			return decodeDecimal, nil
		}
		rep, ok := lt.GetRepresentation().GetTypeInfo().(*pipepb.FieldType_AtomicType)
		if !ok {
			return nil, fmt.Errorf("logical type %q has a representation that is not atomic (%v)", lt.GetUrn(), typeKind(lt.GetRepresentation()))
		}
		return atomicDecoder(rep.AtomicType)
	default:
		return nil, fmt.Errorf("%s fields are not supported: a column takes an atomic type, a timestamp or a decimal", typeKind(t))
	}
}

func typeKind(t *pipepb.FieldType) string {
	switch t.GetTypeInfo().(type) {
	case *pipepb.FieldType_ArrayType:
		return "array"
	case *pipepb.FieldType_IterableType:
		return "iterable"
	case *pipepb.FieldType_MapType:
		return "map"
	case *pipepb.FieldType_RowType:
		return "row"
	case *pipepb.FieldType_LogicalType:
		return "logical"
	case *pipepb.FieldType_AtomicType:
		return "atomic"
	}
	return "untyped"
}

func atomicDecoder(a pipepb.AtomicType) (fieldDecoder, error) {
	switch a {
	case pipepb.AtomicType_BYTE:
		return func(b []byte) (any, int, error) {
			if len(b) < 1 {
				return nil, 0, errShort
			}
			return int16(b[0]), 1, nil
		}, nil
	case pipepb.AtomicType_INT16:
		return func(b []byte) (any, int, error) {
			if len(b) < 2 {
				return nil, 0, errShort
			}
			return int16(binary.BigEndian.Uint16(b)), 2, nil
		}, nil
	case pipepb.AtomicType_INT32:
		return func(b []byte) (any, int, error) {
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return nil, 0, errVarint
			}
			return int32(uint32(v)), n, nil
		}, nil
	case pipepb.AtomicType_INT64:
		return func(b []byte) (any, int, error) {
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return nil, 0, errVarint
			}
			return int64(v), n, nil
		}, nil
	case pipepb.AtomicType_FLOAT:
		return func(b []byte) (any, int, error) {
			if len(b) < 4 {
				return nil, 0, errShort
			}
			return math.Float32frombits(binary.BigEndian.Uint32(b)), 4, nil
		}, nil
	case pipepb.AtomicType_DOUBLE:
		return func(b []byte) (any, int, error) {
			if len(b) < 8 {
				return nil, 0, errShort
			}
			return math.Float64frombits(binary.BigEndian.Uint64(b)), 8, nil
		}, nil
	case pipepb.AtomicType_STRING:
		return decodeString, nil
	case pipepb.AtomicType_BOOLEAN:
		return func(b []byte) (any, int, error) {
			if len(b) < 1 {
				return nil, 0, errShort
			}
			if b[0] > 1 {
				return nil, 0, fmt.Errorf("boolean byte %d", b[0])
			}
			return b[0] == 1, 1, nil
		}, nil
	case pipepb.AtomicType_BYTES:
		return func(b []byte) (any, int, error) {
			v, n, err := lengthPrefixed(b)
			if err != nil {
				return nil, 0, err
			}
			// Not nil when empty: pgx writes a nil slice as NULL.
			return bytes.Clone(v), n, nil
		}, nil
	}
	return nil, fmt.Errorf("atomic type %v is not supported", a)
}

var (
	errShort  = errors.New("row ends early")
	errVarint = errors.New("bad varint")
)

func lengthPrefixed(b []byte) ([]byte, int, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, 0, errVarint
	}
	if uint64(len(b)-n) < l {
		return nil, 0, errShort
	}
	return b[n : n+int(l)], n + int(l), nil
}

func decodeString(b []byte) (any, int, error) {
	v, n, err := lengthPrefixed(b)
	if err != nil {
		return nil, 0, err
	}
	// PostgreSQL refuses invalid UTF-8 at commit, when the row is in a
	// checkpoint already and would fail every restore: refuse it here.
	if !utf8.Valid(v) {
		return nil, 0, errors.New("string is not valid UTF-8")
	}
	return string(v), n, nil
}

func decodeMillisInstant(b []byte) (any, int, error) {
	if len(b) < 8 {
		return nil, 0, errShort
	}
	ms := int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
	return time.UnixMilli(ms).UTC(), 8, nil
}

// decodeMicrosInstant reads the representation row {seconds, micros}.
func decodeMicrosInstant(b []byte) (any, int, error) {
	var vals [2]int64
	n, err := decodeInt64Row(b, vals[:])
	if err != nil {
		return nil, 0, fmt.Errorf("micros_instant: %w", err)
	}
	return time.Unix(vals[0], vals[1]*1000).UTC(), n, nil
}

// decodeInt64Row reads a row of len(dst) non-null INT64 fields.
func decodeInt64Row(b []byte, dst []int64) (int, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, errVarint
	}
	if count != uint64(len(dst)) {
		return 0, fmt.Errorf("%d fields, want %d", count, len(dst))
	}
	nulls, m, err := lengthPrefixed(b[n:])
	if err != nil {
		return 0, err
	}
	for _, x := range nulls {
		if x != 0 {
			return 0, errors.New("a null field")
		}
	}
	n += m
	for i := range dst {
		v, m := binary.Uvarint(b[n:])
		if m <= 0 {
			return 0, errVarint
		}
		dst[i], n = int64(v), n+m
	}
	return n, nil
}

func decodeDecimal(b []byte) (any, int, error) {
	scale, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, 0, errVarint
	}
	v, m, err := lengthPrefixed(b[n:])
	if err != nil {
		return nil, 0, err
	}
	unscaled := new(big.Int).SetBytes(v)
	if len(v) > 0 && v[0]&0x80 != 0 { // two's complement: negative
		unscaled.Sub(unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
	}
	return pgtype.Numeric{Int: unscaled, Exp: -int32(uint32(scale)), Valid: true}, n + m, nil
}

// decode appends the values of the row in b to dst, in field order: nil
// for a null.
func (d *rowDecoder) decode(b []byte, dst []any) ([]any, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errVarint
	}
	if count > uint64(len(d.decs)) {
		return nil, fmt.Errorf("row of %d fields, the schema has %d", count, len(d.decs))
	}
	nulls, m, err := lengthPrefixed(b[n:])
	if err != nil {
		return nil, fmt.Errorf("null bitmap: %w", err)
	}
	n += m
	base := len(dst)
	dst = append(dst, make([]any, len(d.decs))...)
	vals := dst[base:]
	for k, i := range d.order {
		// The bitmap is by field index; fields past the count are those
		// an older schema did not have.
		null := uint64(k) >= count || (i/8 < len(nulls) && nulls[i/8]&(1<<(i%8)) != 0)
		if null {
			if !d.nullable[i] {
				return nil, fmt.Errorf("field %q is null but not nullable", d.names[i])
			}
			continue
		}
		v, m, err := d.decs[i](b[n:])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", d.names[i], err)
		}
		vals[i], n = v, n+m
	}
	if n != len(b) {
		return nil, fmt.Errorf("%d bytes after the row's last field", len(b)-n)
	}
	return dst, nil
}
