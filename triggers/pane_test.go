package triggers

import "testing"

func TestDecodePaneRoundTrips(t *testing.T) {
	for _, p := range []Pane{
		{First: true, Last: true, Timing: Unknown},
		{First: true, Last: true, Timing: OnTime},
		{First: true, Timing: Early, OnTimeIndex: -1},
		{Timing: Early, Index: 3, OnTimeIndex: -1},
		{Timing: OnTime, Index: 2, OnTimeIndex: 0},
		{Last: true, Timing: Late, Index: 4, OnTimeIndex: 2},
		{Timing: Late, Index: 300, OnTimeIndex: 300},
	} {
		got, err := DecodePane(AppendPane(nil, p))
		if p.Timing == Unknown {
			p.OnTimeIndex = 0
		}
		if err != nil || got != p {
			t.Errorf("DecodePane(AppendPane(%+v)) = %+v, %v", p, got, err)
		}
	}
	for _, b := range [][]byte{nil, {0x10}, {0x20, 1}, {0x30}} {
		if _, err := DecodePane(b); err == nil {
			t.Errorf("DecodePane(%x): no error", b)
		}
	}
}
