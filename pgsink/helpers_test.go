package pgsink

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/wire"
)

// Test rows: a schema built field by field, and rows encoded as Java's
// and Python's row coders encode them.

func atomic(a pipepb.AtomicType, nullable bool) *pipepb.FieldType {
	return &pipepb.FieldType{Nullable: nullable, TypeInfo: &pipepb.FieldType_AtomicType{AtomicType: a}}
}

func logical(urn string, rep *pipepb.FieldType, nullable bool) *pipepb.FieldType {
	return &pipepb.FieldType{Nullable: nullable, TypeInfo: &pipepb.FieldType_LogicalType{
		LogicalType: &pipepb.LogicalType{Urn: urn, Representation: rep}}}
}

func schemaOf(kv ...any) *pipepb.Schema {
	s := &pipepb.Schema{Id: "test"}
	for i := 0; i < len(kv); i += 2 {
		s.Fields = append(s.Fields, &pipepb.Field{Name: kv[i].(string), Type: kv[i+1].(*pipepb.FieldType)})
	}
	return s
}

// rowCoder is the coder of rows of s.
func rowCoder(t testing.TB, s *pipepb.Schema) *pipepb.Coder {
	b, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: URNRowCoder, Payload: b}}
}

// encodeRow encodes values in Beam's row coding: int64 as INT64, int32 as
// INT32, int16 as INT16, uint8 as BYTE, float32, float64, string, bool,
// []byte, time.Time as millis_instant, nil as null.
func encodeRow(vals ...any) []byte {
	var nulls []byte
	for i, v := range vals {
		if v == nil {
			for len(nulls) <= i/8 {
				nulls = append(nulls, 0)
			}
			nulls[i/8] |= 1 << (i % 8)
		}
	}
	b := binary.AppendUvarint(nil, uint64(len(vals)))
	b = binary.AppendUvarint(b, uint64(len(nulls)))
	b = append(b, nulls...)
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
		case int64:
			b = binary.AppendUvarint(b, uint64(v))
		case int32:
			b = binary.AppendUvarint(b, uint64(uint32(v)))
		case int16:
			b = binary.BigEndian.AppendUint16(b, uint16(v))
		case uint8:
			b = append(b, v)
		case float32:
			b = binary.BigEndian.AppendUint32(b, math.Float32bits(v))
		case float64:
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
		case string:
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		case []byte:
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		case bool:
			if v {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case time.Time:
			b = binary.BigEndian.AppendUint64(b, uint64(v.UnixMilli())^(1<<63))
		default:
			panic("encodeRow: no encoding for a value of this type")
		}
	}
	return b
}

// element makes a windowed value in the global window holding a
// length-prefixed row, as the runner's edges carry rows.
func element(row []byte) []byte {
	v := binary.AppendUvarint(nil, uint64(len(row)))
	v = append(v, row...)
	return wire.AppendWindowedValue(nil, mtime.ZeroTimestamp, nil, []byte{wire.PaneNoFiring}, v)
}

// globalCodec decodes elements made by element.
func globalCodec(t testing.TB) *wire.Codec {
	coders := map[string]*pipepb.Coder{
		"w":  {Spec: &pipepb.FunctionSpec{Urn: wire.URNGlobalWindow}},
		"lp": {Spec: &pipepb.FunctionSpec{Urn: wire.URNLengthPrefix}, ComponentCoderIds: []string{"b"}},
		"b":  {Spec: &pipepb.FunctionSpec{Urn: wire.URNBytes}},
	}
	w, err := wire.MeasureFor(coders, "w")
	if err != nil {
		t.Fatal(err)
	}
	v, err := wire.MeasureFor(coders, "lp")
	if err != nil {
		t.Fatal(err)
	}
	return wire.NewCodec(w, v)
}
