package state

import (
	"strings"
	"testing"
)

// FuzzReadHeld checks that the token and continuation of a state request
// for runner-held values, bytes an SDK sends, make ReadHeld return a page
// of the held group's values or an error, never panic or read elsewhere.
func FuzzReadHeld(f *testing.F) {
	s := memStore(f)
	sh := s.NewShuffle("stage/0")
	sh.Hold(HoldOptions{Above: 4, Readers: 1})
	addValues(f, sh, 1, "k", heldValues(0, 5))
	tok := fireHeld(f, sh, 10)["k"].rest
	want := strings.Join(heldValues(0, 5), "")
	f.Add(tok, []byte(nil), 1)
	f.Add(tok, []byte{0, 0, 0, 0, 0, 0, 0, 1}, 4)
	f.Add([]byte("nonsense"), []byte{1}, 0)
	f.Fuzz(func(t *testing.T, token, cont []byte, max int) {
		page, _, err := s.ReadHeld(token, cont, max)
		if err != nil {
			return
		}
		if len(page)%4 != 0 || !strings.Contains(want, string(page)) {
			t.Fatalf("ReadHeld(%x, %x, %d) = %q, not values of the group %q", token, cont, max, page, want)
		}
	})
}
