package fnapi

import "testing"

func TestFramesJoin(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []string
		want  string
	}{
		{"none", nil, ""},
		{"empty frames only", []string{"", ""}, ""},
		{"one", []string{"abc"}, "abc"},
		{"several, empties skipped", []string{"ab", "", "c", "def"}, "abcdef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f frames
			for _, p := range tc.parts {
				f.add([]byte(p))
			}
			if f.n != len(tc.want) {
				t.Errorf("n = %d, want %d", f.n, len(tc.want))
			}
			if got := f.join(); string(got) != tc.want {
				t.Errorf("join = %q, want %q", got, tc.want)
			}
		})
	}
}

// A single frame is handed on as received, not copied.
func TestFramesJoinOneFrameNoCopy(t *testing.T) {
	p := []byte("abc")
	var f frames
	f.add(p)
	if got := f.join(); &got[0] != &p[0] {
		t.Error("join copied the only frame")
	}
}

func TestFrameSize(t *testing.T) {
	big := make([]byte, maxFrame+1)
	half := make([]byte, maxFrame/2)
	for _, tc := range []struct {
		name string
		els  [][]byte
		want int
	}{
		{"small", [][]byte{[]byte("ab"), []byte("c")}, 3},
		{"fills up to the bound", [][]byte{half, half, []byte("x")}, maxFrame},
		{"a large first element alone", [][]byte{big, []byte("x")}, maxFrame + 1},
		{"stops before a large element", [][]byte{[]byte("ab"), big}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := frameSize(tc.els); got != tc.want {
				t.Errorf("frameSize = %d, want %d", got, tc.want)
			}
		})
	}
}
