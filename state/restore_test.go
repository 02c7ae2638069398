package state

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// exportImport copies namespace ns of src, as of now, into a fresh store,
// as a checkpoint and a restore do.
func exportImport(t *testing.T, src *Store, ns string) *Store {
	t.Helper()
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/chk", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Export([]string{ns}, func() (vfs.File, error) {
		return fs.Create("/chk/n.sst", vfs.WriteCategoryUnspecified)
	}); err != nil {
		t.Fatal(err)
	}
	dst := memStore(t)
	if err := dst.Import(context.Background(), fs, []string{"/chk/n.sst"}); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestShuffleRestored: a shuffle restored into a fresh store with its
// sequence counter fires the restored groups (in key groups it has not
// written to itself) and keeps new values beside them; without the counter
// a new value of the same window and key would overwrite a restored one.
func TestShuffleRestored(t *testing.T) {
	src := memStore(t)
	a := src.NewShuffle("gbk/0")
	for _, x := range []add{{3, 9, "w", "k", 1, "a"}, {3, 9, "w", "k", 2, "b"}, {70, 19, "w2", "j", 11, "c"}} {
		if err := a.Add(x.kg, x.end, []byte(x.window), []byte(x.key), x.ts, []byte(x.value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		restore bool
		want    string
	}{
		{"with the counter", true, "w/k end=9 ts=[1,5] a,b,d"},
		{"without it the restored value is lost", false, "w/k end=9 ts=[2,5] d,b"}, // d took a's key
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := exportImport(t, src, "gbk/0")
			b := dst.NewShuffle("gbk/0")
			if tc.restore {
				if err := b.SetSeq(a.Seq()); err != nil {
					t.Fatal(err)
				}
			} else {
				b.used[3/8] |= 1 << 3 // as if it knew the key group: only the counter is missing
			}
			if err := b.Add(3, 9, []byte("w"), []byte("k"), 5, []byte("d")); err != nil {
				t.Fatal(err)
			}
			got := fire(t, b, 10)
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("fired %q, want %q", got, tc.want)
			}
			if tc.restore {
				if got := fire(t, b, 20); len(got) != 1 || got[0] != "w2/j end=19 ts=[11,11] c" {
					t.Errorf("key group 70 restored but never written here fired %q", got)
				}
			}
		})
	}
}

// TestSeqCountersRestored: user state and triggered windows continue
// their counters from a restored value, never backwards.
func TestSeqCountersRestored(t *testing.T) {
	s := memStore(t)
	u := s.NewUserState("st/0")
	u.SetSeq(41)
	u.SetSeq(3)
	if u.Seq() != 41 {
		t.Errorf("user state counter %d, want 41", u.Seq())
	}
	w := s.NewTriggerWindows("gbk/1")
	if err := w.SetSeq(17); err != nil || w.Seq() != 17 {
		t.Errorf("trigger windows counter %d (%v), want 17", w.Seq(), err)
	}
}

// TestShuffleRestoredDropsHeldGroups: a group fired before the checkpoint
// and still held for its consumer is in the snapshot; a restored shuffle
// told its ranges drops it instead of firing it again, and fires the
// groups that had not fired.
func TestShuffleRestoredDropsHeldGroups(t *testing.T) {
	src := memStore(t)
	a := src.NewShuffle("gbk/0")
	a.Hold(HoldOptions{Above: 4, Readers: 1})
	for i := range 5 {
		if err := a.Add(3, 9, []byte("w"), []byte("big"), 1, []byte(fmt.Sprint("value", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Add(3, 19, []byte("w2"), []byte("k"), 11, []byte("later")); err != nil {
		t.Fatal(err)
	}
	var rest bool
	if err := a.Fire(10, func(g *Group) error { rest = g.Rest != nil; return nil }); err != nil {
		t.Fatal(err)
	}
	held := a.HeldRanges()
	if !rest || len(held) != 1 {
		t.Fatalf("fired group held: %v, held ranges %d; want one", rest, len(held))
	}
	dst := exportImport(t, src, "gbk/0")
	b := dst.NewShuffle("gbk/0")
	if err := b.DropRanges(held); err != nil {
		t.Fatal(err)
	}
	if err := b.SetSeq(a.Seq()); err != nil {
		t.Fatal(err)
	}
	if got := fire(t, b, 20); len(got) != 1 || got[0] != "w2/k end=19 ts=[11,11] later" {
		t.Errorf("restored shuffle fired %q, want only the group that had not fired", got)
	}
	if err := b.DropRanges([][2][]byte{{[]byte("other"), []byte("otherz")}}); err == nil {
		t.Error("a range outside the namespace was dropped")
	}
}
