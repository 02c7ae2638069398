package joboptions

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzParse checks that options from any JSON an SDK might send parse or
// fail with an error, never panic, and that parsing is deterministic.
func FuzzParse(f *testing.F) {
	f.Add(`{"beam:option:weir_checkpoint_interval:v1": "10s", "job_name": "j"}`)
	f.Add(`{"beam:option:go_options:v1": {"options": {"weir_restore": "true", "weir_combine_lifting": "false"}}}`)
	f.Add(`{"weir_checkpoint_interval": 5, "job_name": 3}`)
	f.Fuzz(func(t *testing.T, js string) {
		var s structpb.Struct
		if err := protojson.Unmarshal([]byte(js), &s); err != nil {
			return
		}
		o1, err1 := Parse(&s)
		o2, err2 := Parse(&s)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("Parse(%s) twice: %v, then %v", js, err1, err2)
		}
		if err1 == nil && (o1 == nil || o2 == nil) {
			t.Fatalf("Parse(%s): nil options without an error", js)
		}
	})
}
