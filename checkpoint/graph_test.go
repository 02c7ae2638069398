package checkpoint

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestCheckGraph(t *testing.T) {
	job := []GraphNode{{Stage: "s1", Name: "Impulse", Parallelism: 1}, {Stage: "s2", Name: "GroupByKey", Parallelism: 4}, {Stage: "s3", Name: "Sum", Parallelism: 4}}
	for _, tc := range []struct {
		name  string
		graph []GraphNode
		kg    int
		want  []string // substrings of the error; none: it matches
	}{
		{"same", job, 128, nil},
		{"no graph recorded", nil, 128, []string{"records no graph"}},
		{"other parallelism", []GraphNode{{Stage: "s1", Name: "Impulse", Parallelism: 1}, {Stage: "s2", Name: "GroupByKey", Parallelism: 2}, {Stage: "s3", Name: "Sum", Parallelism: 2}}, 128,
			[]string{"node 1 (s2) has parallelism 2, the job's 4", "node 2 (s3) has parallelism 2, the job's 4"}},
		{"a node fewer", job[:2], 128, []string{"2 nodes, the job has 3"}},
		{"another stage", []GraphNode{{Stage: "s1", Name: "Impulse", Parallelism: 1}, {Stage: "s2", Name: "Count", Parallelism: 4}, {Stage: "s3", Name: "Sum", Parallelism: 4}}, 128,
			[]string{"node 1 is stage s2 (Count), the job's is s2 (GroupByKey)"}},
		{"other key groups", job, 64, []string{"64 key groups"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckGraph(&Manifest{Checkpoint: 7, KeyGroups: tc.kg, Graph: tc.graph}, job)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "checkpoint 7") {
				t.Errorf("%v does not name the checkpoint", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v does not say %q", err, w)
				}
			}
		})
	}
}

// TestFinished: a root without FINISHED was not finished; MarkFinished
// records the newest checkpoint, and a graph is recorded in manifests.
func TestFinished(t *testing.T) {
	fs := vfs.NewMem()
	graph := []GraphNode{{Stage: "s1", Name: "Impulse", Parallelism: 1}}
	s, err := OpenStorage(StorageOptions{Dir: "/root", FS: fs, Job: "j", Graph: graph})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.FinishedAt(); ok || err != nil {
		t.Fatalf("a fresh root is finished (%v)", err)
	}
	for id := ID(1); id <= 2; id++ {
		w, err := s.Begin(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(time.Now(), nil); err != nil {
			t.Fatal(err)
		}
	}
	c, _, err := s.Latest()
	if err != nil || CheckGraph(&c.Manifest, graph) != nil {
		t.Fatalf("latest %+v (%v): its graph does not match", c, err)
	}
	if err := s.MarkFinished(time.Now()); err != nil {
		t.Fatal(err)
	}
	if last, ok, err := s.FinishedAt(); !ok || last != 2 || err != nil {
		t.Errorf("finished at %d, %v (%v); want 2", last, ok, err)
	}
	if ids, _ := s.List(); len(ids) != 2 {
		t.Errorf("checkpoints %v after MarkFinished, want both kept", ids)
	}
}
