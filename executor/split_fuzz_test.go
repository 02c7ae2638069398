package executor

import (
	"fmt"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/protobuf/proto"
)

// FuzzApplySplit applies a split response of any bytes, as an SDK answers
// ProcessBundleSplit, to a task of n input elements. It must return an
// error or a split that loses and repeats nothing: every input element is
// in the task's primary or in the residual exactly once, but the one the
// SDK split within, which its primary and residual roots replace.
func FuzzApplySplit(f *testing.F) {
	for _, r := range []*fnpb.ProcessBundleSplitResponse{
		{ChannelSplits: []*fnpb.ProcessBundleSplitResponse_ChannelSplit{{TransformId: "src", LastPrimaryElement: 1, FirstResidualElement: 2}}},
		{PrimaryRoots: []*fnpb.BundleApplication{{Element: []byte("p")}},
			ResidualRoots: []*fnpb.DelayedBundleApplication{{Application: &fnpb.BundleApplication{Element: []byte("r")}}},
			ChannelSplits: []*fnpb.ProcessBundleSplitResponse_ChannelSplit{{TransformId: "src", LastPrimaryElement: 0, FirstResidualElement: 2}}},
		{ResidualRoots: []*fnpb.DelayedBundleApplication{{Application: &fnpb.BundleApplication{Element: []byte("r")}}}},
	} {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(4), b)
	}
	f.Fuzz(func(t *testing.T, n uint8, b []byte) {
		var r fnpb.ProcessBundleSplitResponse
		if err := proto.Unmarshal(b, &r); err != nil {
			return
		}
		in := make([][]byte, n)
		for i := range in {
			in[i] = fmt.Appendf(nil, "in-%d", i)
		}
		task := newSDFTask(in)
		res, err := task.applySplit("src", &r)
		if err != nil {
			return
		}
		seen := map[string]int{}
		for _, e := range append(task.primary(), res...) {
			seen[string(e)]++
		}
		for i, e := range in {
			want := 1
			if i == task.at {
				want = 0
			}
			if seen[string(e)] != want {
				t.Fatalf("split %v of %d elements: element %d is in primary and residual %d times, want %d",
					&r, n, i, seen[string(e)], want)
			}
		}
	})
}
