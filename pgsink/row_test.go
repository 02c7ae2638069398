package pgsink

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/jackc/pgx/v5/pgtype"
)

func allTypes() *pipepb.Schema {
	return schemaOf(
		"b", atomic(pipepb.AtomicType_BYTE, false),
		"i16", atomic(pipepb.AtomicType_INT16, false),
		"i32", atomic(pipepb.AtomicType_INT32, false),
		"i64", atomic(pipepb.AtomicType_INT64, false),
		"f32", atomic(pipepb.AtomicType_FLOAT, false),
		"f64", atomic(pipepb.AtomicType_DOUBLE, false),
		"s", atomic(pipepb.AtomicType_STRING, false),
		"ok", atomic(pipepb.AtomicType_BOOLEAN, false),
		"raw", atomic(pipepb.AtomicType_BYTES, false),
		"at", logical(urnMillisInstant, atomic(pipepb.AtomicType_INT64, false), false),
		"n", atomic(pipepb.AtomicType_INT64, true),
	)
}

func TestDecodeRow(t *testing.T) {
	d, errs := newRowDecoder(allTypes())
	if errs != nil {
		t.Fatal(errs)
	}
	at := time.Date(2026, 12, 2, 10, 0, 0, 123e6, time.UTC)
	row := encodeRow(uint8(200), int16(-300), int32(-5), int64(-1<<40), float32(1.5), 2.25, "héllo", true, []byte{0, 1}, at, nil)
	got, err := d.decode(row, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int16(200), int16(-300), int32(-5), int64(-1 << 40), float32(1.5), 2.25, "héllo", true, []byte{0, 1}, at, nil}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decoded %v, want %v", got, want)
	}
}

// TestDecodeMicrosAndDecimal: Python's Timestamp (micros_instant, a row
// of seconds and micros) and Decimal (scale, two's complement bytes).
func TestDecodeMicrosAndDecimal(t *testing.T) {
	rep := &pipepb.FieldType{TypeInfo: &pipepb.FieldType_RowType{RowType: &pipepb.RowType{Schema: schemaOf(
		"seconds", atomic(pipepb.AtomicType_INT64, false), "micros", atomic(pipepb.AtomicType_INT64, false))}}}
	s := schemaOf("at", logical(urnMicrosInstant, rep, false), "amount", logical(urnDecimal, atomic(pipepb.AtomicType_BYTES, false), false))
	d, errs := newRowDecoder(s)
	if errs != nil {
		t.Fatal(errs)
	}
	row := binary.AppendUvarint(nil, 2)
	row = append(row, 0)
	row = append(row, encodeRow(int64(1_800_000_000), int64(250))...) // the nested row
	row = binary.AppendUvarint(row, 2)                                // scale
	row = append(row, 2, 0xfe, 0x0c)                                  // -500 in two bytes
	got, err := d.decode(row, nil)
	if err != nil {
		t.Fatal(err)
	}
	if at := got[0].(time.Time); !at.Equal(time.Unix(1_800_000_000, 250_000)) {
		t.Errorf("micros_instant %v", at)
	}
	n := got[1].(pgtype.Numeric)
	if n.Int.Cmp(big.NewInt(-500)) != 0 || n.Exp != -2 || !n.Valid {
		t.Errorf("decimal %v e%d, want -500 e-2", n.Int, n.Exp)
	}
}

func TestDecodeRowErrors(t *testing.T) {
	s := schemaOf("a", atomic(pipepb.AtomicType_INT64, false), "s", atomic(pipepb.AtomicType_STRING, true))
	d, errs := newRowDecoder(s)
	if errs != nil {
		t.Fatal(errs)
	}
	for _, c := range []struct {
		name string
		row  []byte
		want string
	}{
		{"null in a field that is not nullable", encodeRow(nil, "x"), `field "a" is null but not nullable`},
		{"too many fields", encodeRow(int64(1), "x", int64(2)), "row of 3 fields"},
		{"bytes after the row", append(encodeRow(int64(1), "x"), 9), "1 bytes after"},
		{"cut short", encodeRow(int64(1), "xyz")[:6], `field "s": row ends early`},
		{"bad UTF-8", encodeRow(int64(1), "\xff"), "not valid UTF-8"},
		{"empty", nil, "bad varint"},
	} {
		_, err := d.decode(c.row, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one holding %q", c.name, err, c.want)
		}
	}
	// An older schema's row, one field short: the last field is null.
	got, err := d.decode(encodeRow(int64(7)), nil)
	if err != nil || len(got) != 2 || got[1] != nil {
		t.Errorf("short row: %v, %v; want [7 <nil>]", got, err)
	}
}

func TestRowDecoderRefuses(t *testing.T) {
	arr := &pipepb.FieldType{TypeInfo: &pipepb.FieldType_ArrayType{ArrayType: &pipepb.ArrayType{ElementType: atomic(pipepb.AtomicType_INT64, false)}}}
	mp := &pipepb.FieldType{TypeInfo: &pipepb.FieldType_MapType{MapType: &pipepb.MapType{KeyType: atomic(pipepb.AtomicType_STRING, false), ValueType: atomic(pipepb.AtomicType_STRING, false)}}}
	s := schemaOf("ok", atomic(pipepb.AtomicType_INT64, false), "tags", arr, "attrs", mp,
		"odd", logical("example:row_logical", &pipepb.FieldType{TypeInfo: &pipepb.FieldType_RowType{RowType: &pipepb.RowType{Schema: schemaOf("x", atomic(pipepb.AtomicType_INT64, false))}}}, false))
	_, errs := newRowDecoder(s)
	got := fmt.Sprint(errs)
	for _, want := range []string{`field "tags": array fields are not supported`, `field "attrs": map fields`, `field "odd": logical type "example:row_logical"`} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %s; want one holding %q", got, want)
		}
	}
	if len(errs) != 3 {
		t.Errorf("%d errors, want 3 (one per field refused)", len(errs))
	}
}

// FuzzDecodeRow: rows come from an SDK, over the network; no input may
// panic the decoder.
func FuzzDecodeRow(f *testing.F) {
	d, errs := newRowDecoder(allTypes())
	if errs != nil {
		f.Fatal(errs)
	}
	f.Add(encodeRow(uint8(1), int16(2), int32(3), int64(4), float32(5), 6.0, "s", false, []byte("r"), time.Unix(0, 0), int64(9)))
	f.Add(encodeRow(uint8(1), int16(2), int32(3), int64(4), float32(5), 6.0, "s", false, []byte("r"), time.Unix(0, 0), nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := d.decode(b, nil)
		if err == nil && len(vals) != 11 {
			t.Fatalf("decoded %d values, want 11", len(vals))
		}
	})
}

// TestDecodeEncodingPositions: a schema with encoding positions is
// encoded in their order (Java's and Python's row coders), its null
// bitmap still by field index, and decoded back into field order.
func TestDecodeEncodingPositions(t *testing.T) {
	s := schemaOf("a", atomic(pipepb.AtomicType_INT64, false), "b", atomic(pipepb.AtomicType_STRING, true), "c", atomic(pipepb.AtomicType_BOOLEAN, false))
	s.EncodingPositionsSet = true
	s.Fields[0].EncodingPosition, s.Fields[1].EncodingPosition, s.Fields[2].EncodingPosition = 2, 0, 1
	d, errs := newRowDecoder(s)
	if errs != nil {
		t.Fatal(errs)
	}
	// Encoded b, c, a.
	row := binary.AppendUvarint(nil, 3)
	row = append(row, 0, 2, 'h', 'i', 1, 7)
	got, err := d.decode(row, nil)
	if err != nil || fmt.Sprint(got) != "[7 hi true]" {
		t.Errorf("decoded %v, %v; want [7 hi true]", got, err)
	}
	// b null: bit 1 of the bitmap, whatever its encoding position.
	row = binary.AppendUvarint(nil, 3)
	row = append(row, 1, 1<<1, 0, 9)
	got, err = d.decode(row, nil)
	if err != nil || fmt.Sprint(got) != "[9 <nil> false]" {
		t.Errorf("decoded %v, %v; want [9 <nil> false]", got, err)
	}
	s.Fields[2].EncodingPosition = 0
	if _, errs := newRowDecoder(s); errs == nil || !strings.Contains(fmt.Sprint(errs), "not a permutation") {
		t.Errorf("errors %v for repeated positions; want one", errs)
	}
}
