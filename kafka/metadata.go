package kafka

import (
	"encoding/binary"

	"github.com/weir-runner/weir/wire"
)

// A read WithMetadata emits each record as a row of kafkaio.MetadataSchema
// in Beam's row coding (beam:coder:row:v1), as Java's and Python's row
// coders read it:
//
//	uvarint field count (9), then the null bitmap as bytes (uvarint length,
//	then bit i of byte i/8 set for a null field i; length 0 when none is
//	null), then each non-null field in schema order: strings and bytes as
//	uvarint length and bytes, int32 as the uvarint of its 32 bits (Java's
//	VarInt of an int, Python's write_var_int32), int64 as the uvarint of its
//	64 bits, an array as a big-endian int32 count and its elements, a
//	nested row as a row, without a length.
//
// The runner cannot measure a row coder, so on its edges the row is
// length-prefixed (beam:coder:length_prefix:v1 around it), as the SDK
// stages downstream are told.

// Field indexes of the nullable fields of kafkaio.MetadataSchema.
const (
	metaKey   = 4
	metaValue = 5
	metaField = 9 // fields in all
)

// Kafka's timestamp type names, by id + 1.
var timestampTypeNames = [...]string{"NoTimestampType", "CreateTime", "LogAppendTime"}

// encodeMetadataRecords makes windowed, length-prefixed rows of records,
// in one new buffer.
func encodeMetadataRecords(recs []Record) [][]byte {
	out := make([][]byte, len(recs))
	var row []byte
	var buf []byte
	for i, r := range recs {
		row = appendMetadataRow(row[:0], r)
		start := len(buf)
		buf = wire.AppendWindowedValue(buf, r.EventTime, nil, noFiring, appendBytes(nil, row))
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// appendMetadataRow appends r as a row of kafkaio.MetadataSchema.
func appendMetadataRow(dst []byte, r Record) []byte {
	dst = binary.AppendUvarint(dst, metaField)
	var nulls byte
	if r.Key == nil {
		nulls |= 1 << metaKey
	}
	if r.Value == nil {
		nulls |= 1 << metaValue
	}
	if nulls != 0 {
		dst = append(dst, 1, nulls)
	} else {
		dst = append(dst, 0)
	}
	dst = appendBytes(dst, []byte(r.Topic))
	dst = binary.AppendUvarint(dst, uint64(uint32(r.Partition)))
	dst = binary.AppendUvarint(dst, uint64(r.Offset))
	dst = binary.AppendUvarint(dst, uint64(r.Timestamp))
	if r.Key != nil {
		dst = appendBytes(dst, r.Key)
	}
	if r.Value != nil {
		dst = appendBytes(dst, r.Value)
	}
	// headers: never null, as Kafka's consumer gives every record a list.
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendUvarint(dst, 2)
		if h.Value == nil {
			dst = append(dst, 1, 1<<1)
		} else {
			dst = append(dst, 0)
		}
		dst = appendBytes(dst, []byte(h.Key))
		if h.Value != nil {
			dst = appendBytes(dst, h.Value)
		}
	}
	tt := r.TimestampType
	if tt < -1 || tt > 1 {
		tt = -1
	}
	dst = binary.AppendUvarint(dst, uint64(uint32(int32(tt))))
	return appendBytes(dst, []byte(timestampTypeNames[tt+1]))
}
