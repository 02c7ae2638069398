package kafkaio

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// metadataSchemaID is fixed so every expansion gives the record row the same
// schema id; it is a UUID because Java's schema translation parses ids as
// UUIDs.
const metadataSchemaID = "a208ae37-7686-4dc5-b047-082759c28780"

// MetadataSchema is the row schema of the output of a read WithMetadata
// (Beam's kafka_read_with_metadata), field for field what Java's KafkaIO
// produces for cross-language reads (ByteArrayKafkaRecord), so a pipeline
// that reads those rows by name works unchanged. The runner encodes each
// record as a beam:coder:row:v1 row of this schema:
//
//	topic string, partition int32, offset int64, timestamp int64 (ms),
//	key nullable bytes, value nullable bytes,
//	headers nullable array of row{key string, value nullable bytes},
//	timestampTypeId int32, timestampTypeName string
//
// timestampTypeId and timestampTypeName are Kafka's: -1 "NoTimestampType",
// 0 "CreateTime", 1 "LogAppendTime". headers is never null (Kafka's
// consumer gives every record a list, maybe empty); key and value are null
// for a record without one.
func MetadataSchema() *pipepb.Schema {
	return proto.Clone(metadataSchema).(*pipepb.Schema)
}

var metadataSchema = &pipepb.Schema{
	Id: metadataSchemaID,
	Fields: []*pipepb.Field{
		{Name: "topic", Type: atomicType(pipepb.AtomicType_STRING, false)},
		{Name: "partition", Type: atomicType(pipepb.AtomicType_INT32, false)},
		{Name: "offset", Type: atomicType(pipepb.AtomicType_INT64, false)},
		{Name: "timestamp", Type: atomicType(pipepb.AtomicType_INT64, false)},
		{Name: "key", Type: atomicType(pipepb.AtomicType_BYTES, true)},
		{Name: "value", Type: atomicType(pipepb.AtomicType_BYTES, true)},
		{Name: "headers", Type: &pipepb.FieldType{
			Nullable: true,
			TypeInfo: &pipepb.FieldType_ArrayType{ArrayType: &pipepb.ArrayType{
				ElementType: &pipepb.FieldType{TypeInfo: &pipepb.FieldType_RowType{RowType: &pipepb.RowType{
					Schema: &pipepb.Schema{
						Id: "9ad6446f-a970-48f5-8797-00e1249a6ae8",
						Fields: []*pipepb.Field{
							{Name: "key", Type: atomicType(pipepb.AtomicType_STRING, false)},
							{Name: "value", Type: atomicType(pipepb.AtomicType_BYTES, true)},
						},
					},
				}}},
			}},
		}},
		{Name: "timestampTypeId", Type: atomicType(pipepb.AtomicType_INT32, false)},
		{Name: "timestampTypeName", Type: atomicType(pipepb.AtomicType_STRING, false)},
	},
}

// MetadataSchemaBytes returns the payload of the output's row coder: the
// marshalled MetadataSchema.
func MetadataSchemaBytes() []byte { return append([]byte(nil), metadataSchemaBytes...) }

var metadataSchemaBytes = func() []byte {
	b, err := proto.Marshal(metadataSchema)
	if err != nil {
		panic(err) // a constant message always marshals
	}
	return b
}()

func atomicType(t pipepb.AtomicType, nullable bool) *pipepb.FieldType {
	return &pipepb.FieldType{Nullable: nullable, TypeInfo: &pipepb.FieldType_AtomicType{AtomicType: t}}
}
