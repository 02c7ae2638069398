package translate

import (
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/test/integration/primitives"
	"google.golang.org/protobuf/proto"
)

// FuzzBuild checks that a mutated pipeline proto, as a job server receives
// it, makes Build return a plan or an error, never panic.
func FuzzBuild(f *testing.F) {
	for _, p := range []*pipepb.Pipeline{
		marshal(f, scoped(primitives.CoGBK)()),
		marshal(f, primitives.ParDoSideInput()),
		marshal(f, scoped(primitives.Flatten)()),
	} {
		b, err := proto.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p pipepb.Pipeline
		if err := proto.Unmarshal(b, &p); err != nil {
			return
		}
		_, _ = Build(&p, Options{})
	})
}
