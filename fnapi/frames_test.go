package fnapi

import "testing"

func TestFramesBytes(t *testing.T) {
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
			if f.parts.Len() != len(tc.want) {
				t.Errorf("Len = %d, want %d", f.parts.Len(), len(tc.want))
			}
			if got := f.parts.Bytes(); string(got) != tc.want {
				t.Errorf("Bytes = %q, want %q", got, tc.want)
			}
		})
	}
}

// A single frame is handed on as received, not copied.
func TestFramesBytesOneFrameNoCopy(t *testing.T) {
	p := []byte("abc")
	var f frames
	f.add(p)
	if got := f.parts.Bytes(); &got[0] != &p[0] {
		t.Error("Bytes copied the only frame")
	}
}

func TestNextFrame(t *testing.T) {
	big := make([]byte, maxFrame+1)
	half := make([]byte, maxFrame/2)
	for _, tc := range []struct {
		name    string
		els     [][]byte
		n, want int
	}{
		{"none", nil, 0, 0},
		{"small", [][]byte{[]byte("ab"), []byte("c")}, 2, 3},
		{"fills up to the bound", [][]byte{half, half, []byte("x")}, 2, maxFrame},
		{"a large first element alone", [][]byte{big, []byte("x")}, 1, maxFrame + 1},
		{"stops before a large element", [][]byte{[]byte("ab"), big}, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n, size := nextFrame(tc.els); n != tc.n || size != tc.want {
				t.Errorf("nextFrame = %d elements, %d bytes; want %d, %d", n, size, tc.n, tc.want)
			}
		})
	}
}
