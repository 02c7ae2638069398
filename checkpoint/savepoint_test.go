package checkpoint

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestSavepointSchedule: a savepoint triggers on the next tick, not at the
// next interval; one asked for while a checkpoint is in flight triggers as
// that one ends; it is aligned whatever the job's mode; and its failure
// does not fail a job that tolerates no checkpoint failure.
func TestSavepointSchedule(t *testing.T) {
	c, err := NewCoordinator(Options{Interval: time.Hour, Mode: Unaligned}, twoTasks, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.RequestSavepoint(t0.Add(time.Second))
	if !c.Next().Equal(t0.Add(time.Second)) {
		t.Fatalf("Next = %v after a savepoint request, want the request's instant", c.Next())
	}
	id, ok, err := c.Tick(t0.Add(time.Second))
	if err != nil || !ok || id != 1 {
		t.Fatalf("Tick = %d, %v, %v; want savepoint 1 triggered", id, ok, err)
	}
	if p, _ := c.Pending(); !p.Savepoint {
		t.Errorf("pending %+v is not a savepoint", p)
	}
	if _, ok := c.SwitchAt(1); ok {
		t.Errorf("a savepoint of an unaligned job goes unaligned")
	}
	if err := c.Fail(t0.Add(2*time.Second), 1, errors.New("disk full")); err != nil {
		t.Fatalf("a failed savepoint failed the job: %v", err)
	}
	// The next checkpoint is an ordinary one, at the interval, unaligned.
	id, ok, _ = c.Tick(t0.Add(time.Second + time.Hour))
	if !ok || id != 2 {
		t.Fatalf("Tick = %d, %v; want checkpoint 2 an interval after", id, ok)
	}
	if at, ok := c.SwitchAt(2); !ok || !at.Equal(t0.Add(time.Second+time.Hour)) {
		t.Errorf("checkpoint 2 SwitchAt = %v, %v; want unaligned at once", at, ok)
	}
	// Asked for while 2 is in flight: it waits for 2, then triggers.
	c.RequestSavepoint(t0.Add(time.Hour + 2*time.Second))
	if _, ok, _ := c.Tick(t0.Add(time.Hour + 3*time.Second)); ok {
		t.Fatalf("a savepoint triggered while checkpoint 2 was in flight")
	}
	c.Ack(t0, Ack{Task: twoTasks[0], ID: 2})
	c.Ack(t0, Ack{Task: twoTasks[1], ID: 2})
	if _, err := c.Complete(t0.Add(time.Hour+4*time.Second), 2); err != nil {
		t.Fatal(err)
	}
	id, ok, _ = c.Tick(t0.Add(time.Hour + 4*time.Second))
	if p, _ := c.Pending(); !ok || id != 3 || !p.Savepoint {
		t.Fatalf("Tick after checkpoint 2 = %d, %v (pending %+v); want savepoint 3", id, ok, p)
	}
	// An ordinary checkpoint's failure still counts.
	c.Fail(t0.Add(time.Hour+5*time.Second), 3, errors.New("x"))
	c.Tick(t0.Add(3 * time.Hour))
	if err := c.Fail(t0.Add(3*time.Hour), 4, errors.New("x")); !errors.Is(err, ErrTooManyFailures) {
		t.Errorf("checkpoint 4's failure = %v, want ErrTooManyFailures", err)
	}
}

// TestDriverAnswersSavepoints: a request is answered by the savepoint it
// caused, with its statistics; a request the driver can no longer serve
// (it stopped) is answered failed rather than left waiting.
func TestDriverAnswersSavepoints(t *testing.T) {
	r := startDriver(t, Options{Interval: time.Hour}, func(Stats) error { return nil })
	ch := r.d.RequestSavepoint()
	if id := <-r.triggers; id != 1 {
		t.Fatalf("triggered %d, want savepoint 1 at once", id)
	}
	r.d.Ack(Ack{Task: twoTasks[0], ID: 1})
	r.d.Ack(Ack{Task: twoTasks[1], ID: 1})
	st := <-ch
	if st.ID != 1 || st.Status != Completed || !st.Savepoint {
		t.Fatalf("savepoint request answered %+v, want savepoint 1 completed", st)
	}
	<-r.finished
	r.cancel()
	<-r.errc
	r.errc <- nil // for the cleanup
	st = <-r.d.RequestSavepoint()
	if st.Status != Failed || st.Reason != ErrDriverStopped {
		t.Errorf("a request after the driver stopped = %+v, want failed: %s", st, ErrDriverStopped)
	}
}

func TestCopyOutMakesAVerifiedSavepoint(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs, 3)
	if err := writeCheckpoint(s, 7); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyOut(7, "/savepoints/sp-7"); err != nil {
		t.Fatal(err)
	}
	c, err := OpenSavepoint(fs, "/savepoints/sp-7")
	if err != nil {
		t.Fatalf("OpenSavepoint: %v", err)
	}
	if c.Manifest.Checkpoint != 7 || len(c.Manifest.Files) != 2 {
		t.Errorf("savepoint manifest %+v, want checkpoint 7 with its 2 files", c.Manifest)
	}
	if err := s.CopyOut(7, "/savepoints/sp-7"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("copying onto an existing savepoint = %v, want a refusal", err)
	}
	// Retention in the root does not touch the savepoint.
	for id := ID(8); id <= 12; id++ {
		if err := writeCheckpoint(s, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := OpenSavepoint(fs, "/savepoints/sp-7"); err != nil {
		t.Errorf("the savepoint after retention removed chk-7: %v", err)
	}
	// An altered file is found.
	f, err := fs.OpenReadWrite("/savepoints/sp-7/n1-s0.sst", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("X"), 3)
	f.Close()
	var ce *CorruptError
	if _, err := OpenSavepoint(fs, "/savepoints/sp-7"); !errors.As(err, &ce) || ce.Problem != Mismatch {
		t.Errorf("OpenSavepoint of an altered savepoint = %v, want a checksum mismatch", err)
	}
	if _, err := OpenSavepoint(fs, "/savepoints/none"); err == nil {
		t.Errorf("OpenSavepoint of a missing folder succeeded")
	}
}

func TestMatchGraph(t *testing.T) {
	saved := []GraphNode{
		{Stage: "s1", Name: "Impulse", Parallelism: 1},
		{Stage: "s2", Name: "count/CountFn", Parallelism: 2, Transform: "e3"},
		{Stage: "s3", Name: "Sink", Parallelism: 2},
	}
	state := map[int]bool{0: true, 1: true} // the sink holds nothing
	for _, tc := range []struct {
		name    string
		job     []GraphNode
		rename  map[string]string
		drop    bool
		into    []int
		fresh   []int
		dropped []string
		want    []string // error substrings
	}{
		{name: "same", job: saved, into: []int{0, 1, 2}},
		{name: "renamed through the mapping",
			job:    []GraphNode{saved[0], {Stage: "s2", Name: "tally/CountFn", Parallelism: 2, Transform: "e3"}, saved[2]},
			rename: map[string]string{"count/CountFn": "tally/CountFn"}, into: []int{0, 1, 2}},
		{name: "renamed without a mapping",
			job:  []GraphNode{saved[0], {Stage: "s2", Name: "tally/CountFn", Parallelism: 2, Transform: "e3"}, saved[2]},
			want: []string{`the state of "count/CountFn" (stage s2) has no transform in the job`}},
		{name: "renamed, state dropped", drop: true,
			job:  []GraphNode{saved[0], {Stage: "s2", Name: "tally/CountFn", Parallelism: 2, Transform: "e3"}, saved[2]},
			into: []int{0, -1, 2}, fresh: []int{1}, dropped: []string{"count/CountFn"}},
		{name: "a stateless node removed needs no permission",
			job: saved[:2], into: []int{0, 1, -1}},
		{name: "a node added starts fresh, stages renumbered",
			job: []GraphNode{saved[0], {Stage: "s2", Name: "Parse", Parallelism: 2},
				{Stage: "s3", Name: "count/CountFn", Parallelism: 2, Transform: "e3"}, {Stage: "s4", Name: "Sink", Parallelism: 2}},
			into: []int{0, 2, 3}, fresh: []int{1}},
		{name: "mapping names what is not there",
			job:    saved,
			rename: map[string]string{"nope": "count/CountFn", "Sink": "gone"},
			want: []string{`renames "nope", which the savepoint has no transform of`,
				`renames "Sink" to "gone", which the job has no transform of`}},
		{name: "other parallelism",
			job:  []GraphNode{saved[0], {Stage: "s2", Name: "count/CountFn", Parallelism: 4, Transform: "e3"}, saved[2]},
			want: []string{`"count/CountFn" has parallelism 2 in the savepoint and 4 in the job`}},
		{name: "other transform id",
			job:  []GraphNode{saved[0], {Stage: "s2", Name: "count/CountFn", Parallelism: 2, Transform: "e9"}, saved[2]},
			want: []string{`under transform id "e3" in the savepoint and "e9" in the job`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manifest{Checkpoint: 5, KeyGroups: KeyGroups, Graph: saved}
			got, err := MatchGraph(m, tc.job, MatchOptions{Rename: tc.rename, AllowDropped: tc.drop,
				HasState: func(i int) bool { return state[i] }})
			if len(tc.want) > 0 {
				var me *GraphMismatchError
				if !errors.As(err, &me) {
					t.Fatalf("MatchGraph = %v, want a mismatch", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				if len(me.Mismatches) != len(tc.want) {
					t.Errorf("mismatches %q, want %d", me.Mismatches, len(tc.want))
				}
				return
			}
			if err != nil {
				t.Fatalf("MatchGraph: %v", err)
			}
			if !slices.Equal(got.Into, tc.into) || !slices.Equal(got.Fresh, tc.fresh) || strings.Join(got.Dropped, ",") != strings.Join(tc.dropped, ",") {
				t.Errorf("MatchGraph = into %v fresh %v dropped %v; want %v %v %v", got.Into, got.Fresh, got.Dropped, tc.into, tc.fresh, tc.dropped)
			}
		})
	}
}
