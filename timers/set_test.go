package timers

import (
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

func ev(key string, fire, hold mtime.Time) Timer {
	return Timer{Transform: "t", Family: "f", Domain: EventTime, Key: []byte(key), Fire: fire, Hold: hold}
}

func keys(ts []Timer) string {
	s := ""
	for _, t := range ts {
		s += string(t.Key)
	}
	return s
}

func TestDueInFireOrder(t *testing.T) {
	s := New()
	s.Set(ev("c", 30, 30))
	s.Set(ev("a", 10, 10))
	s.Set(ev("b", 20, 20))
	s.Set(ev("d", 20, 20)) // ties fire in the order they were set
	tests := []struct {
		wm       mtime.Time
		want     string
		left     int
		wantHold mtime.Time
	}{
		{10, "", 4, 10},  // a watermark at 10 has not passed 10
		{11, "a", 3, 20}, // now it has
		{25, "bd", 1, 30},
		{25, "", 1, 30},
		{mtime.MaxTimestamp, "c", 0, mtime.MaxTimestamp},
	}
	for _, tt := range tests {
		got := s.Due(EventTime, tt.wm)
		if keys(got) != tt.want || s.Len() != tt.left || s.Hold() != tt.wantHold {
			t.Errorf("Due(%v) = %q, len %d, hold %v; want %q, %d, %v", tt.wm, keys(got), s.Len(), s.Hold(), tt.want, tt.left, tt.wantHold)
		}
	}
}

func TestOneLiveTimerPerID(t *testing.T) {
	tests := []struct {
		name     string
		ops      func(s *Set)
		wm       mtime.Time
		want     string
		wantHold mtime.Time
	}{
		{"reset later replaces", func(s *Set) { s.Set(ev("a", 10, 10)); s.Set(ev("a", 50, 50)) }, 20, "", 50},
		{"reset earlier replaces", func(s *Set) { s.Set(ev("a", 50, 50)); s.Set(ev("a", 10, 5)) }, 20, "a", mtime.MaxTimestamp},
		{"clear removes", func(s *Set) { s.Set(ev("a", 10, 10)); s.Clear("t", "f", []byte("a"), nil, nil) }, 20, "", mtime.MaxTimestamp},
		{"clear of unknown is a no-op", func(s *Set) { s.Clear("t", "f", []byte("zz"), nil, nil); s.Set(ev("a", 10, 10)) }, 20, "a", mtime.MaxTimestamp},
		{"tags are separate timers", func(s *Set) {
			x := ev("a", 10, 10)
			y := ev("a", 12, 12)
			y.Tag = []byte("y")
			s.Set(x)
			s.Set(y)
		}, 20, "aa", mtime.MaxTimestamp},
		{"windows are separate timers", func(s *Set) {
			x := ev("a", 10, 10)
			y := ev("a", 30, 30)
			y.Window = []byte("w2")
			s.Set(x)
			s.Set(y)
		}, 20, "a", 30},
		{"hold below fire holds the watermark", func(s *Set) { s.Set(ev("a", 100, 3)) }, 20, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			tt.ops(s)
			got := s.Due(EventTime, tt.wm)
			if keys(got) != tt.want || s.Hold() != tt.wantHold {
				t.Errorf("due %q hold %v; want %q hold %v", keys(got), s.Hold(), tt.want, tt.wantHold)
			}
		})
	}
}

func TestDomainsAreSeparate(t *testing.T) {
	s := New()
	p := ev("p", 100, 100)
	p.Domain = ProcessingTime
	s.Set(p)
	s.Set(ev("e", 100, 100))
	if got := s.Due(EventTime, 200); keys(got) != "e" {
		t.Fatalf("event due %q, want e", keys(got))
	}
	if n, ok := s.Next(ProcessingTime); !ok || n != 100 {
		t.Fatalf("Next(processing) = %v, %v", n, ok)
	}
	// A processing-time timer is due when the clock reaches it.
	if got := s.Due(ProcessingTime, 100); keys(got) != "p" {
		t.Fatalf("processing due %q, want p", keys(got))
	}
	if _, ok := s.Next(ProcessingTime); ok {
		t.Fatal("a processing-time timer is left")
	}
}

func TestAllInSetOrder(t *testing.T) {
	s := New()
	s.Set(Timer{Family: "a", Fire: 30})
	s.Set(Timer{Family: "b", Fire: 10})
	s.Set(Timer{Family: "a", Fire: 20}) // replaces the first
	var got []string
	for _, x := range s.All() {
		got = append(got, fmt.Sprint(x.Family, x.Fire))
	}
	if fmt.Sprint(got) != "[b10 a20]" {
		t.Errorf("All = %v, want [b10 a20]", got)
	}
}

// TestHas: a timer is live from Set until it is cleared, replaced by
// nothing, or due; asking costs no allocation.
func TestHas(t *testing.T) {
	s := New()
	has := func() bool { return s.Has("t", "f", []byte("a"), nil, nil) }
	steps := []struct {
		name string
		op   func()
		want bool
	}{
		{"empty", func() {}, false},
		{"set", func() { s.Set(ev("a", 10, 10)) }, true},
		{"another key", func() { s.Set(ev("b", 10, 10)) }, true},
		{"not yet due", func() { s.Due(EventTime, 10) }, true},
		{"due", func() { s.Due(EventTime, 11) }, false},
		{"set again", func() { s.Set(ev("a", 20, 20)) }, true},
		{"cleared", func() { s.Clear("t", "f", []byte("a"), nil, nil) }, false},
	}
	for _, st := range steps {
		st.op()
		if got := has(); got != st.want {
			t.Errorf("after %s: Has = %v, want %v", st.name, got, st.want)
		}
	}
	key, win := []byte("a"), []byte("w")
	if n := testing.AllocsPerRun(100, func() { s.Has("t", "f", key, win, nil) }); n != 0 {
		t.Errorf("Has allocates %v times per call, want 0", n)
	}
}
