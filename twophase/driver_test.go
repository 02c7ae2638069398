package twophase

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/twophase/twophasetest"
)

// callLog is a Sink that records its calls, stages values in the store
// and "commits" them into a shared list, as a commit-time sink does.
type callLog struct {
	calls []string
	st    Session
	// visible is the external system: committed values, by run and epoch.
	visible map[string]bool
	out     *[]string
	fail    int // Commit calls that fail before committing
}

func (l *callLog) log(format string, args ...any) {
	l.calls = append(l.calls, fmt.Sprintf(format, args...))
}

func (l *callLog) Open(_ context.Context, s Session) error { l.st = s; l.log("open"); return nil }
func (l *callLog) Abort(_ context.Context, restored []Committable) error {
	var s []string
	for _, c := range restored {
		s = append(s, fmt.Sprint(c.Epoch))
		if c.Run == l.st.Run {
			return fmt.Errorf("restored committable of epoch %d has this run's token", c.Epoch)
		}
	}
	l.log("abort but [%s]", strings.Join(s, " "))
	return nil
}
func (l *callLog) Write(_ context.Context, e Epoch, elems [][]byte) error {
	l.log("write %d %s", e, elems)
	return l.st.Staging.Append(e, elems)
}
func (l *callLog) Prepare(_ context.Context, e Epoch) ([]byte, error) {
	l.log("prepare %d", e)
	return []byte(fmt.Sprint("c", e)), nil
}
func (l *callLog) Commit(_ context.Context, cs []Committable) error {
	var s []string
	for _, c := range cs {
		s = append(s, fmt.Sprintf("%d:%s", c.Epoch, c.Data))
	}
	l.log("commit %s", strings.Join(s, " "))
	if l.fail > 0 {
		l.fail--
		return errors.New("broker down")
	}
	for _, c := range cs {
		key := fmt.Sprint(c.Run, "/", c.Epoch)
		if l.visible[key] {
			continue
		}
		l.visible[key] = true
		if err := l.st.Staging.Read(c.Epoch, c.Epoch+1, func(_ Epoch, v []byte) error {
			*l.out = append(*l.out, string(v))
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}
func (l *callLog) Close() error { l.log("close"); return nil }

func newLogDriver(store *state.Store, visible map[string]bool, out *[]string) (*Driver, *callLog) {
	l := &callLog{visible: visible, out: out}
	return &Driver{Sink: l, Pending: NewPending(store, "s/0", "s[0]"), Name: "test sink s[0]",
		Backoff: func(int) time.Duration { return 0 }}, l
}

func bs(vals ...string) [][]byte {
	var out [][]byte
	for _, v := range vals {
		out = append(out, []byte(v))
	}
	return out
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCalls(t *testing.T, l *callLog, want ...string) {
	t.Helper()
	if !slices.Equal(l.calls, want) {
		t.Errorf("calls:\n  %s\nwant:\n  %s", strings.Join(l.calls, "\n  "), strings.Join(want, "\n  "))
	}
	l.calls = nil
}

// TestDriverLifecycle: the order of the sink's calls over one run: epochs
// without writes are not prepared, a commit covers the sealed epochs below
// the completed checkpoint, a repeated notification commits nothing, and
// the end of input commits the open epoch.
func TestDriverLifecycle(t *testing.T) {
	ctx := context.Background()
	var out []string
	d, l := newLogDriver(twophasetest.Store(t), map[string]bool{}, &out)
	mustDo(t, d.Process(ctx, 0, bs("a", "b")))
	mustDo(t, d.Barrier(ctx, 1))
	mustDo(t, d.Barrier(ctx, 2)) // nothing written in epoch 1
	mustDo(t, d.Process(ctx, 0, bs("c")))
	mustDo(t, d.Barrier(ctx, 2)) // not newer: nothing
	wantCalls(t, l, "open", "abort but []", "write 0 [a b]", "prepare 0", "write 2 [c]")
	mustDo(t, d.CheckpointComplete(ctx, 1))
	mustDo(t, d.CheckpointComplete(ctx, 1))
	mustDo(t, d.CheckpointComplete(ctx, 5)) // not seen barrier 5: commits only what is sealed
	wantCalls(t, l, "commit 0:c0")
	mustDo(t, d.Barrier(ctx, 3))
	mustDo(t, d.Process(ctx, 0, bs("d")))
	mustDo(t, d.Finish(ctx))
	wantCalls(t, l, "prepare 2", "write 3 [d]", "prepare 3", "commit 2:c2 3:c3", "close")
	if !slices.Equal(out, []string{"a", "b", "c", "d"}) || d.Committed != 3 {
		t.Errorf("visible %q, %d committed; want a b c d, 3", out, d.Committed)
	}
	if cs, err := d.Pending.Prepared(0, 100); err != nil || len(cs) != 0 {
		t.Errorf("committables left in the store: %v, %v", cs, err)
	}
}

// TestDriverRecovers: a driver over a store restored from checkpoint 2
// aborts from epoch 2 and commits the restored committables before
// anything else; those the crashed run committed are not written twice.
func TestDriverRecovers(t *testing.T) {
	ctx := context.Background()
	var out []string
	visible := map[string]bool{}
	store := twophasetest.Store(t)
	d, _ := newLogDriver(store, visible, &out)
	mustDo(t, d.Process(ctx, 0, bs("a")))
	mustDo(t, d.Barrier(ctx, 1))
	mustDo(t, d.Process(ctx, 0, bs("b")))
	mustDo(t, d.Barrier(ctx, 2))
	restore := twophasetest.Checkpoint(t, store, "s/0")
	mustDo(t, d.CheckpointComplete(ctx, 1)) // epoch 0 committed, then the crash
	mustDo(t, d.Process(ctx, 0, bs("lost")))

	r, l := newLogDriver(restore(), visible, &out)
	mustDo(t, r.Process(ctx, 0, bs("c")))
	wantCalls(t, l, "open", "abort but [0 1]", "commit 0:c0 1:c1", "write 2 [c]")
	mustDo(t, r.Finish(ctx))
	if !slices.Equal(out, []string{"a", "b", "c"}) {
		t.Errorf("visible %q, want a b c", out)
	}
	lineage, err := d.Pending.Lineage()
	mustDo(t, err)
	if l.st.Lineage != lineage || l.st.Run == d.run || len(l.st.Run) != 16 {
		t.Errorf("restored lineage %q and run %q; want the crashed run's lineage %q and a new run (not %q)",
			l.st.Lineage, l.st.Run, lineage, d.run)
	}
}

// TestDriverNewRunAfterRestore: a job restored from a checkpoint older
// than its last commit numbers its epochs again from there. The epochs it
// writes under the same numbers are a new run's: nothing of them is
// taken for committed, though the older run committed those numbers.
func TestDriverNewRunAfterRestore(t *testing.T) {
	ctx := context.Background()
	var out []string
	visible := map[string]bool{}
	store := twophasetest.Store(t)
	d, _ := newLogDriver(store, visible, &out)
	mustDo(t, d.Process(ctx, 0, bs("a")))
	mustDo(t, d.Barrier(ctx, 1))
	restore := twophasetest.Checkpoint(t, store, "s/0")
	mustDo(t, d.CheckpointComplete(ctx, 1))
	mustDo(t, d.Process(ctx, 0, bs("b")))
	mustDo(t, d.Barrier(ctx, 2))
	mustDo(t, d.CheckpointComplete(ctx, 2)) // epoch 1 committed

	r, _ := newLogDriver(restore(), visible, &out)
	mustDo(t, r.Process(ctx, 0, bs("b", "c"))) // the sources replay from checkpoint 1
	mustDo(t, r.Barrier(ctx, 3))
	mustDo(t, r.CheckpointComplete(ctx, 3))
	slices.Sort(out)
	if !slices.Equal(out, []string{"a", "b", "b", "c"}) {
		t.Errorf("visible %q, want a once, b again (committed before the restore, then replayed), c", out)
	}
}

// TestDriverRetriesCommit: a failed commit is reported, retried with the
// same committables, and counted once.
func TestDriverRetriesCommit(t *testing.T) {
	ctx := context.Background()
	var out []string
	d, l := newLogDriver(twophasetest.Store(t), map[string]bool{}, &out)
	var retried []string
	d.OnRetry = func(err error) { retried = append(retried, err.Error()) }
	mustDo(t, d.Process(ctx, 0, bs("a")))
	mustDo(t, d.Barrier(ctx, 4))
	l.fail = 2
	l.calls = nil
	mustDo(t, d.CheckpointComplete(ctx, 4))
	wantCalls(t, l, "commit 0:c0", "commit 0:c0", "commit 0:c0")
	if len(retried) != 2 || retried[0] != "test sink s[0]: commit of checkpoint 4: broker down (retrying)" {
		t.Errorf("retried %q", retried)
	}
	if d.Committed != 1 || !slices.Equal(out, []string{"a"}) {
		t.Errorf("committed %d, visible %q", d.Committed, out)
	}
	// A permanent failure ends the job at once.
	mustDo(t, d.Process(ctx, 0, bs("b")))
	mustDo(t, d.Barrier(ctx, 5))
	d.Sink = &permanentSink{l}
	err := d.CheckpointComplete(ctx, 5)
	if !IsPermanent(err) || !strings.Contains(err.Error(), "commit of checkpoint 5: fenced") {
		t.Errorf("CheckpointComplete = %v, want the permanent error", err)
	}
}

type permanentSink struct{ *callLog }

func (permanentSink) Commit(context.Context, []Committable) error {
	return Permanent(errors.New("fenced"))
}

var _ executor.Operator = (*Driver)(nil)
