package triggers

import (
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

func iv(s, e mtime.Time) Interval { return Interval{Start: s, End: e} }

func TestMergeSessions(t *testing.T) {
	tests := []struct {
		name string
		in   []Interval
		want []Merged
	}{
		{"empty", nil, nil},
		{"single", []Interval{iv(0, 10)}, []Merged{{iv(0, 10), []int{0}}}},
		{"overlapping", []Interval{iv(0, 10), iv(5, 15)},
			[]Merged{{iv(0, 15), []int{0, 1}}}},
		{"adjacent windows stay apart", []Interval{iv(0, 10), iv(10, 20)},
			[]Merged{{iv(0, 10), []int{0}}, {iv(10, 20), []int{1}}}},
		{"out of order arrivals", []Interval{iv(20, 30), iv(0, 10), iv(8, 22)},
			[]Merged{{iv(0, 30), []int{0, 1, 2}}}},
		{"chain through a later window", []Interval{iv(0, 10), iv(15, 25), iv(9, 16)},
			[]Merged{{iv(0, 25), []int{0, 1, 2}}}},
		{"nested", []Interval{iv(0, 100), iv(10, 20), iv(30, 40)},
			[]Merged{{iv(0, 100), []int{0, 1, 2}}}},
		{"two sessions with a gap", []Interval{iv(0, 10), iv(3, 13), iv(50, 60), iv(55, 65)},
			[]Merged{{iv(0, 13), []int{0, 1}}, {iv(50, 65), []int{2, 3}}}},
		{"duplicates", []Interval{iv(5, 15), iv(5, 15)},
			[]Merged{{iv(5, 15), []int{0, 1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MergeSessions(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MergeSessions(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestIntervalMaxTimestamp(t *testing.T) {
	if got := iv(0, 3000).MaxTimestamp(); got != 2999 {
		t.Errorf("MaxTimestamp = %v, want 2999", got)
	}
}
