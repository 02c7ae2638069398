package twophase

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/twophase/twophasetest"
)

// fullOp is an operator with every optional capability; it logs each
// capability's calls.
type fullOp struct {
	opLog
	calls []string
}

func (o *fullOp) ProcessingTime(_ context.Context, t mtime.Time) error {
	o.calls = append(o.calls, fmt.Sprint("processing-time ", t))
	return nil
}
func (o *fullOp) NextWake() (time.Time, bool) {
	o.calls = append(o.calls, "next-wake")
	return time.Unix(7, 0), true
}
func (o *fullOp) Wake(_ context.Context, now time.Time) error {
	o.calls = append(o.calls, fmt.Sprint("wake ", now.Unix()))
	return nil
}
func (o *fullOp) SnapshotState(id executor.BarrierID) ([]byte, error) {
	o.calls = append(o.calls, fmt.Sprint("snapshot ", id))
	return []byte("inner state"), nil
}
func (o *fullOp) RestoreState(b []byte) error {
	o.calls = append(o.calls, "restore "+string(b))
	return nil
}
func (o *fullOp) Detach(port int, elems [][]byte, release bool) ([][]byte, error) {
	o.calls = append(o.calls, fmt.Sprint("detach ", port, " ", release))
	out := make([][]byte, len(elems))
	for i, e := range elems {
		out[i] = append([]byte("detached "), e...)
	}
	return out, nil
}
func (o *fullOp) CheckpointComplete(_ context.Context, id executor.BarrierID) error {
	o.calls = append(o.calls, fmt.Sprint("complete ", id))
	return nil
}

// forwards calls one capability of a StableInput wrapping a fullOp and
// returns what the wrapped operator must have logged. A capability added
// to executor.Capabilities needs an entry here.
var forwards = map[reflect.Type]func(t *testing.T, s *StableInput) []string{
	reflect.TypeFor[executor.ProcessingTimer](): func(t *testing.T, s *StableInput) []string {
		check(t, any(s).(executor.ProcessingTimer).ProcessingTime(context.Background(), 5))
		return []string{"processing-time 5"}
	},
	reflect.TypeFor[executor.Waker](): func(t *testing.T, s *StableInput) []string {
		w := any(s).(executor.Waker)
		if at, ok := w.NextWake(); !ok || at.Unix() != 7 {
			t.Errorf("NextWake %v %v, want the wrapped operator's", at, ok)
		}
		check(t, w.Wake(context.Background(), time.Unix(8, 0)))
		return []string{"next-wake", "wake 8"}
	},
	reflect.TypeFor[executor.StateSnapshotter](): func(t *testing.T, s *StableInput) []string {
		b, err := any(s).(executor.StateSnapshotter).SnapshotState(1)
		check(t, err)
		// What the wrapped operator recorded comes back to it.
		again := &fullOp{}
		r := &StableInput{Inner: again, Pending: s.Pending}
		check(t, any(r).(executor.StateRestorer).RestoreState(b))
		if !slices.Equal(again.calls, []string{"restore inner state"}) {
			t.Errorf("restoring the snapshot called %q of the wrapped operator", again.calls)
		}
		return []string{"snapshot 1"}
	},
	reflect.TypeFor[executor.StateRestorer](): func(t *testing.T, s *StableInput) []string {
		b, err := (&StableInput{Inner: &fullOp{}, Pending: s.Pending}).SnapshotState(1)
		check(t, err)
		check(t, any(s).(executor.StateRestorer).RestoreState(b))
		return []string{"restore inner state"}
	},
	reflect.TypeFor[executor.Detacher](): func(t *testing.T, s *StableInput) []string {
		got, err := any(s).(executor.Detacher).Detach(0, b("a"), false)
		check(t, err)
		if string(got[0]) != "detached a" {
			t.Errorf("Detach gave %q, want the wrapped operator's", got)
		}
		// Main input waits in the store: detached, for good.
		check(t, s.Process(context.Background(), 0, b("x")))
		var kept []string
		check(t, s.Pending.Read(0, 1, func(_ executor.BarrierID, v []byte) error { kept = append(kept, string(v)); return nil }))
		if !slices.Equal(kept, []string{"detached x"}) {
			t.Errorf("the store keeps %q, want the detached element", kept)
		}
		return []string{"detach 0 false", "detach 0 true"}
	},
	reflect.TypeFor[executor.CheckpointListener](): func(t *testing.T, s *StableInput) []string {
		check(t, any(s).(executor.CheckpointListener).CheckpointComplete(context.Background(), 3))
		return []string{"complete 3"}
	},
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStableInputForwardsCapabilities walks every optional interface the
// executor finds on operators: StableInput must have each, and calling it
// must reach the operator it wraps.
func TestStableInputForwardsCapabilities(t *testing.T) {
	for _, c := range executor.Capabilities {
		t.Run(c.Name(), func(t *testing.T) {
			if !reflect.TypeFor[*StableInput]().Implements(c) {
				t.Fatalf("StableInput does not implement %s: it hides the wrapped operator's from the executor", c)
			}
			call, ok := forwards[c]
			if !ok {
				t.Fatalf("nothing checks that StableInput forwards %s: add it to forwards", c)
			}
			inner := &fullOp{}
			s := &StableInput{Inner: inner, Pending: NewPending(twophasetest.Store(t), "st/0", "stable")}
			want := call(t, s)
			if !slices.Equal(inner.calls, want) {
				t.Errorf("the wrapped operator saw %s, want %s", strings.Join(inner.calls, ", "), strings.Join(want, ", "))
			}
		})
	}
}

// TestStableInputRestoreVersions: the wrapper tells its snapshot from the
// wrapped operator's by its version. The operator's own (written before
// its stage required stable input) reaches it whole; a newer version, or
// state for an operator that cannot restore any, is refused, naming the
// stage.
func TestStableInputRestoreVersions(t *testing.T) {
	store := twophasetest.Store(t)
	for _, tc := range []struct {
		name, blob string
		inner      executor.Operator
		calls      string
		err        string
	}{
		{"the wrapper's", `{"stable_input":1,"given":5,"inner":"aW5uZXI="}`, &fullOp{}, "restore inner", ""},
		{"the wrapper's, the operator recorded nothing", `{"stable_input":1,"given":5}`, &fullOp{}, "", ""},
		{"the operator's own", `{"timers":[]}`, &fullOp{}, `restore {"timers":[]}`, ""},
		{"the operator's own, not JSON", "\x00\x01", &fullOp{}, "restore \x00\x01", ""},
		{"newer", `{"stable_input":2,"inner":"aW5uZXI="}`, &fullOp{}, "", "stage[0] (stable input): restore: the checkpoint's state is version 2"},
		{"for an operator without state", `{"stable_input":1,"inner":"aW5uZXI="}`, &opLog{}, "", "stage[0] (stable input): restore: the checkpoint holds state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &StableInput{Inner: tc.inner.(StableOperator), Pending: NewPending(store, "st/0", "stage[0] (stable input)")}
			err := s.RestoreState([]byte(tc.blob))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			check(t, err)
			if got := strings.Join(tc.inner.(*fullOp).calls, ";"); got != tc.calls {
				t.Errorf("the wrapped operator saw %q, want %q", got, tc.calls)
			}
		})
	}
}
