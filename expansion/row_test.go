package expansion

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/xlangx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

type inner struct {
	N int64
}

type everyType struct {
	S      string
	I64    int64
	I32    int32
	B      bool
	Raw    []byte
	D      float64
	List   []string
	Map    map[string]string
	Absent *int64
	Some   *string
	Nested inner
	Rows   []inner
}

// TestDecodeRowAsGoEncodes decodes a row the Go SDK's own encoder wrote,
// with every type a configuration uses.
func TestDecodeRowAsGoEncodes(t *testing.T) {
	some := "here"
	b, err := xlangx.EncodeStructPayload(everyType{S: "s", I64: -5, I32: 7, B: true, Raw: []byte{0, 1}, D: 2.5,
		List: []string{"a", "b"}, Map: map[string]string{"k": "v"}, Some: &some, Nested: inner{N: 3},
		Rows: []inner{{N: 1}, {N: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	var ecp pipepb.ExternalConfigurationPayload
	if err := proto.Unmarshal(b, &ecp); err != nil {
		t.Fatal(err)
	}
	r, err := decodeRow(ecp.GetSchema(), ecp.GetPayload())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for i, f := range r.fields {
		v := r.values[i]
		if rr, ok := v.(*row); ok {
			v = rr.values
		}
		if vs, ok := v.([]any); ok && f.GetName() == "Rows" {
			for j := range vs {
				vs[j] = vs[j].(*row).values
			}
		}
		got[f.GetName()] = v
	}
	want := map[string]any{"S": "s", "I64": int64(-5), "I32": int64(7), "B": true, "Raw": []byte{0, 1}, "D": 2.5,
		"List": []any{"a", "b"}, "Map": []mapEntry{{"k", "v"}}, "Absent": nil, "Some": "here",
		"Nested": []any{int64(3)}, "Rows": []any{[]any{int64(1)}, []any{int64(2)}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n %#v\nwant\n %#v", got, want)
	}
}

func atomicType(a pipepb.AtomicType) *pipepb.FieldType {
	return &pipepb.FieldType{TypeInfo: &pipepb.FieldType_AtomicType{AtomicType: a}}
}

func schemaOf(types ...*pipepb.FieldType) *pipepb.Schema {
	s := &pipepb.Schema{}
	for i, t := range types {
		s.Fields = append(s.Fields, &pipepb.Field{Name: string(rune('a' + i%26)), Type: t})
	}
	return s
}

func be32(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// TestDecodeRowRefuses: what a bad request could use to exhaust the
// server is an error, before anything of its size is allocated.
func TestDecodeRowRefuses(t *testing.T) {
	strs := &pipepb.FieldType{TypeInfo: &pipepb.FieldType_ArrayType{ArrayType: &pipepb.ArrayType{ElementType: atomicType(pipepb.AtomicType_STRING)}}}
	smap := &pipepb.FieldType{TypeInfo: &pipepb.FieldType_MapType{MapType: &pipepb.MapType{
		KeyType: atomicType(pipepb.AtomicType_STRING), ValueType: atomicType(pipepb.AtomicType_STRING)}}}
	deep := atomicType(pipepb.AtomicType_STRING)
	for range maxDepth + 1 {
		deep = &pipepb.FieldType{TypeInfo: &pipepb.FieldType_ArrayType{ArrayType: &pipepb.ArrayType{ElementType: deep}}}
	}
	var nested []byte // a list of one list of one list... of one string
	for range maxDepth + 1 {
		nested = append(nested, be32(1)...)
	}
	nested = append(nested, 1, 'x')
	wide := &pipepb.Schema{}
	for range 4096 {
		wide.Fields = append(wide.Fields, &pipepb.Field{Name: "f", Type: atomicType(pipepb.AtomicType_STRING)})
	}
	rowsOfWide := &pipepb.FieldType{TypeInfo: &pipepb.FieldType_ArrayType{ArrayType: &pipepb.ArrayType{ElementType: &pipepb.FieldType{
		TypeInfo: &pipepb.FieldType_RowType{RowType: &pipepb.RowType{Schema: wide}}}}}}
	emptyRows := make([]byte, 2*1000) // 1000 rows of no fields: every field null
	for _, tc := range []struct {
		name string
		s    *pipepb.Schema
		b    []byte
		want string
	}{
		{"map larger than its bytes", schemaOf(smap), cat([]byte{1, 0}, be32(0x30000001)), "map of 805306369 entries in 0 bytes"},
		{"negative map", schemaOf(smap), cat([]byte{1, 0}, be32(0xffffffff)), "map of -1 entries"},
		{"list larger than its bytes", schemaOf(strs), cat([]byte{1, 0}, be32(1<<30), []byte{1, 'x'}), "1073741824 elements in 2 bytes"},
		{"block larger than its bytes", schemaOf(strs), cat([]byte{1, 0}, be32(0xffffffff), []byte{0x80, 0x80, 0x04}), "block of 65536 elements"},
		{"string longer than its bytes", schemaOf(atomicType(pipepb.AtomicType_STRING)), []byte{1, 0, 0xff, 0xff, 0x03, 'x'}, "65535 bytes claimed, 1 left"},
		{"types nested too deep", schemaOf(deep), cat([]byte{1, 0}, nested), "nest more than"},
		{"more fields than the schema", schemaOf(atomicType(pipepb.AtomicType_BOOLEAN)), []byte{2, 0, 1, 1}, "row has 2 fields, its schema 1"},
		{"bytes after the row", schemaOf(atomicType(pipepb.AtomicType_BOOLEAN)), []byte{1, 0, 1, 9}, "1 bytes after the row"},
		{"a boolean of 2", schemaOf(atomicType(pipepb.AtomicType_BOOLEAN)), []byte{1, 0, 2}, "boolean 0x2"},
		{"no standard encoding", schemaOf(atomicType(pipepb.AtomicType_INT16)), []byte{1, 0, 1}, "INT16 has no standard encoding"},
		{"bad encoding positions", &pipepb.Schema{EncodingPositionsSet: true, Fields: []*pipepb.Field{
			{Name: "x", Type: atomicType(pipepb.AtomicType_BOOLEAN), EncodingPosition: 1},
			{Name: "y", Type: atomicType(pipepb.AtomicType_BOOLEAN), EncodingPosition: 1}}}, []byte{2, 0, 1, 1}, "encoding position 1"},
		{"few bytes, many fields", schemaOf(rowsOfWide), cat([]byte{1, 0}, be32(1000), emptyRows), "more than 1048576 values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeRow(tc.s, tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decodeRow = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestDecodeRowEncodingPositions reads fields in the order the schema's
// encoding positions give.
func TestDecodeRowEncodingPositions(t *testing.T) {
	s := &pipepb.Schema{EncodingPositionsSet: true, Fields: []*pipepb.Field{
		{Name: "x", Type: atomicType(pipepb.AtomicType_INT64), EncodingPosition: 1},
		{Name: "y", Type: atomicType(pipepb.AtomicType_STRING), EncodingPosition: 0}}}
	r, err := decodeRow(s, []byte{2, 0, 1, 'y', 7})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.values, []any{int64(7), "y"}) {
		t.Errorf("values %v, want [7 y]", r.values)
	}
}
