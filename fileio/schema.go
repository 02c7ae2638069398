package fileio

import (
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// fileSchemaID is fixed so every expansion gives the file row the same
// schema id; a UUID, because Java's schema translation parses ids as
// UUIDs.
const fileSchemaID = "53ddbe8c-6e51-47a1-ab96-2be003d01004"

// FileSchema is the row schema of a watch's elements in ModeFiles, the
// fields of Beam's MatchResult.Metadata that mean something outside Java:
//
//	path string, size_bytes int64, last_modified_millis int64
//
// The runner encodes each file as a beam:coder:row:v1 row of it, which
// Go (FileMetadata), Python (a NamedTuple) and Java (Row) all decode. A
// pipeline's own schema id may differ (an SDK may re-id a schema);
// field names, order and types may not.
func FileSchema() *pipepb.Schema { return proto.Clone(fileSchema).(*pipepb.Schema) }

var fileSchema = &pipepb.Schema{
	Id: fileSchemaID,
	Fields: []*pipepb.Field{
		{Name: "path", Type: atomic(pipepb.AtomicType_STRING)},
		{Name: "size_bytes", Type: atomic(pipepb.AtomicType_INT64)},
		{Name: "last_modified_millis", Type: atomic(pipepb.AtomicType_INT64)},
	},
}

func atomic(t pipepb.AtomicType) *pipepb.FieldType {
	return &pipepb.FieldType{TypeInfo: &pipepb.FieldType_AtomicType{AtomicType: t}}
}
