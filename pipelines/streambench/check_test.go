package main

import (
	"strings"
	"testing"
	"time"
)

// TestConsumerCheck: the bench fails a run whose output lost, changed or
// doubled a sum, or holds a record it cannot read, and passes the exact one.
func TestConsumerCheck(t *testing.T) {
	want := map[sumKey]int{{"k001", 1000}: 3, {"k002", 1000}: 5}
	for _, c := range []struct {
		name    string
		records []string
		err     string // "" for none
	}{
		{"exact", []string{"k001|1000|3", "k002|1000|5", "k003|2000|1"}, ""},
		{"missing", []string{"k001|1000|3"}, "1 of 2 sums missing"},
		{"wrong", []string{"k001|1000|3", "k002|1000|4"}, "sum of {k002 1000} is 4, want 5"},
		{"twice", []string{"k001|1000|3", "k002|1000|5", "k001|1000|3"}, "1 sums seen twice"},
		{"unreadable", []string{"k001|1000|3", "k002|1000|5", "k002,1"}, "1 unreadable records"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := &consumer{visible: map[sumKey]time.Time{}, sums: map[sumKey]int{}}
			for _, r := range c.records {
				cs.note(r, time.UnixMilli(2500))
			}
			err := cs.check(want)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("check: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("check: %v, want an error with %q", err, c.err)
			}
		})
	}
}

// TestLatencies: a sum's latency is its visible time minus its window's
// end, and the quantiles pick from the sorted latencies.
func TestLatencies(t *testing.T) {
	cs := &consumer{visible: map[sumKey]time.Time{}, sums: map[sumKey]int{}}
	cs.note("a|1000|1", time.UnixMilli(2300)) // window [1000, 2000): 300ms
	cs.note("b|1000|1", time.UnixMilli(2100)) // 100ms
	cs.note("a|2000|1", time.UnixMilli(4000)) // 1s
	ds := cs.latencies(map[sumKey]int{{"a", 1000}: 1, {"b", 1000}: 1, {"a", 2000}: 1})
	want := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second}
	if len(ds) != len(want) {
		t.Fatalf("latencies %v, want %v", ds, want)
	}
	for i := range want {
		if ds[i] != want[i] {
			t.Fatalf("latencies %v, want %v", ds, want)
		}
	}
	if q := quantile(ds, 0.5); q != 300*time.Millisecond {
		t.Errorf("p50 %v, want 300ms", q)
	}
	if q := quantile(ds, 0.99); q != time.Second {
		t.Errorf("p99 %v, want 1s", q)
	}
}
