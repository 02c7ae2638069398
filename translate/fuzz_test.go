package translate

import (
	"strings"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/test/integration/primitives"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector/all"
)

// FuzzBuild checks that a mutated pipeline proto, as a job server receives
// it, makes Build return a plan or an error, never panic.
func FuzzBuild(f *testing.F) {
	for _, p := range []*pipepb.Pipeline{
		marshal(f, scoped(primitives.CoGBK)()),
		marshal(f, primitives.ParDoSideInput()),
		marshal(f, scoped(primitives.Flatten)()),
		marshal(f, scoped(primitives.TestStreamStrings)()),
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
		_, _ = Build(&p, Options{Connectors: all.Registry()})
	})
}

// TestBuildRefusesCyclicComposites: a transform among its own parts,
// directly or through another, is an error, not a recursion that
// overflows the stack (which no recover catches: it ended the process).
func TestBuildRefusesCyclicComposites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts map[string][]string
	}{
		{"itself", map[string][]string{"a": {"a"}}},
		{"through another", map[string][]string{"a": {"b"}, "b": {"a"}}},
	} {
		p := &pipepb.Pipeline{RootTransformIds: []string{"a"}, Components: &pipepb.Components{Transforms: map[string]*pipepb.PTransform{}}}
		for id, subs := range tc.parts {
			p.Components.Transforms[id] = &pipepb.PTransform{UniqueName: id, Subtransforms: subs}
		}
		_, err := Build(p, Options{})
		if err == nil || !strings.Contains(err.Error(), "contains itself") {
			t.Errorf("%s: Build = %v, want an error saying the transform contains itself", tc.name, err)
		}
	}
}
