package state

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestSortBufferCommitsInKeyOrder(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sb sortBuffer
	for round, keys := range [][]string{{"c", "a", "b", "aa"}, {"z", "", "y"}} {
		for _, k := range keys {
			sb.add([]byte(k), []byte("v"+k))
		}
		b, err := sb.batch(db)
		if err != nil {
			t.Fatal(err)
		}
		if sb.size() != 0 || len(sb.ents) != 0 {
			t.Fatalf("round %d: buffer not emptied: %d bytes, %d entries", round, sb.size(), len(sb.ents))
		}
		var got []string
		r := b.Reader()
		for {
			_, k, v, ok, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got = append(got, fmt.Sprintf("%s=%s", k, v))
		}
		b.Close()
		want := map[int][]string{0: {"a=va", "aa=vaa", "b=vb", "c=vc"}, 1: {"=v", "y=vy", "z=vz"}}[round]
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("round %d: batch holds %v, want %v", round, got, want)
		}
	}
}
