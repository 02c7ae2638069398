package watermarkmgr

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// model is the rules of the package written as plainly as possible: every
// question is answered by a scan, with no counters and no heap.
type model struct {
	wm          []mtime.Time
	idle, ended []bool
	holds       map[HoldID]mtime.Time
	in, emitted mtime.Time
}

func newModel(n int) *model {
	m := &model{wm: make([]mtime.Time, n), idle: make([]bool, n), ended: make([]bool, n),
		holds: map[HoldID]mtime.Time{}, in: mtime.MinTimestamp, emitted: mtime.MinTimestamp}
	for i := range m.wm {
		m.wm[i] = mtime.MinTimestamp
	}
	m.recompute()
	return m
}

func (m *model) recompute() {
	low, any, live := mtime.MaxTimestamp, false, false
	for i := range m.wm {
		if m.ended[i] {
			continue
		}
		live = true
		if !m.idle[i] {
			any = true
			low = min(low, m.wm[i])
		}
	}
	switch {
	case !live:
		m.in = mtime.MaxTimestamp
	case any:
		m.in = max(m.in, low)
	}
}

func (m *model) output() mtime.Time {
	out := m.in
	for _, h := range m.holds {
		out = min(out, h)
	}
	return max(m.emitted, out)
}

// TestAgainstModel applies seeded random events, out of order and with
// many holds, to a Manager and to the model, and checks they agree and that
// neither watermark ever moves backwards.
func TestAgainstModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			n := rng.IntN(5)
			got, want := New(n), newModel(n)
			lastIn, lastOut := got.Input(), mtime.MinTimestamp
			for i := range 2000 {
				what := applyRandom(t, rng, got, want, n)
				if got.Input() != want.in {
					t.Fatalf("step %d (%s): input %v, model %v", i, what, got.Input(), want.in)
				}
				if got.Output() != want.output() {
					t.Fatalf("step %d (%s): output %v, model %v", i, what, got.Output(), want.output())
				}
				if got.Holds() != len(want.holds) {
					t.Fatalf("step %d (%s): %d holds, model %d", i, what, got.Holds(), len(want.holds))
				}
				if got.Input() < lastIn {
					t.Fatalf("step %d (%s): input went back from %v to %v", i, what, lastIn, got.Input())
				}
				lastIn = got.Input()
				if out, ok := got.Emit(); ok {
					if out <= lastOut {
						t.Fatalf("step %d (%s): emitted %v after %v", i, what, out, lastOut)
					}
					lastOut = out
				}
				want.emitted = want.output()
			}
		})
	}
}

// applyRandom applies one random event to both and returns what it was.
// Watermarks and holds land near the input watermark, on either side, so
// many arrive out of order or behind the output.
func applyRandom(t *testing.T, rng *rand.Rand, got *Manager, want *model, n int) string {
	t.Helper()
	near := func() mtime.Time {
		base := want.in
		if base == mtime.MinTimestamp || base == mtime.MaxTimestamp {
			base = 0
		}
		return base + mtime.Time(rng.IntN(60)-20)
	}
	op := rng.IntN(8)
	if n == 0 {
		op = 4 + rng.IntN(4)
	}
	if op >= 4 {
		id := HoldID(fmt.Sprint("h", rng.IntN(40)))
		if op == 7 {
			_, ok := want.holds[id]
			if got.ReleaseHold(id) != ok {
				t.Fatalf("release %s: manager and model disagree on whether it existed", id)
			}
			delete(want.holds, id)
			return fmt.Sprintf("release %s", id)
		}
		ts := near()
		got.SetHold(id, ts)
		want.holds[id] = ts
		return fmt.Sprintf("hold %s %v", id, ts)
	}
	in := rng.IntN(n)
	ended := want.ended[in]
	var err error
	var what string
	switch op {
	case 0:
		ts := near()
		what = fmt.Sprintf("advance %d %v", in, ts)
		err = got.Advance(InputID(in), ts)
		want.idle[in] = false
		want.wm[in] = max(want.wm[in], ts)
	case 1:
		what = fmt.Sprintf("active %d", in)
		err = got.Active(InputID(in))
		want.idle[in] = false
	case 2:
		what = fmt.Sprintf("idle %d", in)
		err = got.Idle(InputID(in))
		want.idle[in] = true
	case 3:
		if rng.IntN(10) != 0 { // ends are rare, so runs last
			return "nothing"
		}
		what = fmt.Sprintf("end %d", in)
		err = got.End(InputID(in))
		want.ended[in], want.idle[in], want.wm[in] = true, false, mtime.MaxTimestamp
	}
	if ended {
		if !errors.Is(err, ErrEnded) {
			t.Fatalf("%s after end: error %v, want ErrEnded", what, err)
		}
		want.idle[in], want.wm[in] = false, mtime.MaxTimestamp // untouched
	} else if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want.recompute()
	return what
}
