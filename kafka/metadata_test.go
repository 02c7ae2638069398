package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/schema"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/wire"
)

// TestMetadataRow decodes the rows a read WithMetadata emits with the Go
// SDK's own row decoder for kafkaio.MetadataSchema, so the coding is
// Beam's, not only weir's idea of it. (The Python tests read them with
// Python's row coder.)
func TestMetadataRow(t *testing.T) {
	rt, err := schema.ToType(kafkaio.MetadataSchema())
	if err != nil {
		t.Fatal(err)
	}
	dec, err := coder.RowDecoderForStruct(rt)
	if err != nil {
		t.Fatal(err)
	}
	recs := []Record{
		{Topic: "clicks", Partition: 3, Offset: 1 << 40, Key: []byte("k"), Value: []byte("v"), EventTime: 77,
			Timestamp: 1700000000123, TimestampType: 0,
			Headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "h2"}}},
		{Topic: "t", Partition: 0, Offset: 0, Timestamp: 5, TimestampType: 1},                                 // no key, no value
		{Topic: "t", Partition: 2147483647, Key: []byte{}, Value: []byte{}, Timestamp: -1, TimestampType: -1}, // empty, not null
	}
	coders := map[string]*pipepb.Coder{
		"lp": {Spec: &pipepb.FunctionSpec{Urn: wire.URNLengthPrefix}},
		"gw": {Spec: &pipepb.FunctionSpec{Urn: wire.URNGlobalWindow}},
	}
	win, _ := wire.MeasureFor(coders, "gw")
	lp, _ := wire.MeasureFor(coders, "lp")
	codec := wire.NewCodec(win, lp)
	for i, elem := range encodeMetadataRecords(recs) {
		r := recs[i]
		wv, n, err := codec.Decode(elem, nil)
		if err != nil || n != len(elem) {
			t.Fatalf("record %d: %v (%d of %d bytes)", i, err, n, len(elem))
		}
		if wv.Timestamp != r.EventTime {
			t.Errorf("record %d: at %v, want its event time %v", i, wv.Timestamp, r.EventTime)
		}
		// The windowed value's value is the length-prefixed row.
		value, err := codec.ValueOf(elem)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		ln, k := binary.Uvarint(value)
		if k <= 0 || int(ln) != len(value)-k {
			t.Fatalf("record %d: value is not one length-prefixed row: %x", i, value)
		}
		got, err := dec(bytes.NewReader(value[k:]))
		if err != nil {
			t.Fatalf("record %d: the SDK's row decoder: %v", i, err)
		}
		v := reflect.Indirect(reflect.ValueOf(got))
		field := func(name string) any {
			f := v.FieldByNameFunc(func(n string) bool { return equalFold(n, name) })
			if !f.IsValid() {
				t.Fatalf("no field %s in %v", name, v.Type())
			}
			return f.Interface()
		}
		checkEq := func(name string, got, want any) {
			t.Helper()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("record %d: %s = %#v, want %#v", i, name, got, want)
			}
		}
		checkEq("topic", field("topic"), r.Topic)
		checkEq("partition", field("partition"), r.Partition)
		checkEq("offset", field("offset"), r.Offset)
		checkEq("timestamp", field("timestamp"), r.Timestamp)
		checkEq("key", field("key"), nilBytes(r.Key))
		checkEq("value", field("value"), nilBytes(r.Value))
		checkEq("timestampTypeId", field("timestampTypeId"), int32(r.TimestampType))
		checkEq("timestampTypeName", field("timestampTypeName"), timestampTypeNames[r.TimestampType+1])
		hs := reflect.Indirect(reflect.ValueOf(field("headers")))
		var heads []string
		for j := 0; j < hs.Len(); j++ {
			h := reflect.Indirect(hs.Index(j))
			heads = append(heads, fmt.Sprintf("%v=%v", h.Field(0).Interface(), h.Field(1).Interface()))
		}
		var want []string
		for _, h := range r.Headers {
			want = append(want, fmt.Sprintf("%v=%v", h.Key, nilBytes(h.Value)))
		}
		checkEq("headers", heads, want)
	}
}

// nilBytes is how the SDK decodes a nullable bytes field: a pointer, nil
// for null.
func nilBytes(b []byte) *[]byte {
	if b == nil {
		return nil
	}
	return &b
}

func equalFold(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }
