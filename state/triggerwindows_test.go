package state

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func winID(kg int, end mtime.Time, key, win string) WindowID {
	return WindowID{KeyGroup: kg, End: end, Key: []byte(key), Window: []byte(win)}
}

func values(t *testing.T, w *TriggerWindows, id WindowID) string {
	t.Helper()
	var vs []string
	if err := w.Values(id, func(v []byte) error { vs = append(vs, string(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	return strings.Join(vs, ",")
}

// TestTriggerWindowsReadsOwnWrites: metadata, values and the index are seen
// before and after Flush, each window apart from its neighbours.
func TestTriggerWindowsReadsOwnWrites(t *testing.T) {
	w := memStore(t).NewTriggerWindows("gbk/0")
	a, b, c := winID(3, 99, "k", "A"), winID(3, 149, "k", "B"), winID(3, 99, "kk", "A")
	for _, id := range []WindowID{b, a, c} {
		if err := w.Create(id, []byte("meta-"+string(id.Key)+string(id.Window))); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []WindowID{a, b, a, c} {
		if err := w.Append(id, []byte(fmt.Sprint("v", i))); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		if got := values(t, w, a); got != "v0,v2" {
			t.Errorf("%s: values of A = %q", when, got)
		}
		if m, err := w.Meta(b); err != nil || string(m) != "meta-kB" {
			t.Errorf("%s: meta of B = %q, %v", when, m, err)
		}
		var wins []string
		w.KeyWindows(3, []byte("k"), func(id WindowID, meta []byte) error {
			wins = append(wins, fmt.Sprintf("%s@%d=%s", id.Window, id.End, meta))
			return nil
		})
		if got := strings.Join(wins, " "); got != "A@99=meta-kA B@149=meta-kB" {
			t.Errorf("%s: windows of k = %q", when, got)
		}
	}
	check("before flush")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	check("after flush")
	if err := w.ClearValues(a); err != nil {
		t.Fatal(err)
	}
	if got, m := values(t, w, a), values(t, w, c); got != "" || m != "v3" {
		t.Errorf("after clearing A: %q, other key %q", got, m)
	}
	if m, _ := w.Meta(a); string(m) != "meta-kA" {
		t.Errorf("clearing values lost the metadata: %q", m)
	}
	if m, _ := w.Meta(winID(3, 99, "k", "Z")); m != nil {
		t.Errorf("absent window has metadata %q", m)
	}
	if err := w.Create(winID(1<<16, 0, "k", ""), []byte("m")); err == nil {
		t.Error("key group out of range accepted")
	}
}

// TestTriggerWindowsSpillAndExpire writes far more than the memtables hold,
// then collects the windows a watermark expires through the index, as the
// group-by-key does: only they go, the rest read back whole.
func TestTriggerWindowsSpillAndExpire(t *testing.T) {
	s, err := Open(Options{Dir: "db", FS: vfs.NewMem(), MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := s.NewTriggerWindows("gbk/1")
	value := []byte(strings.Repeat("v", 1000))
	const windows, perWindow = 200, 100 // 20 MB
	id := func(i int) WindowID {
		return winID(i%128, mtime.Time(i/10*100+99), fmt.Sprint("k", i), fmt.Sprint("w", i/10))
	}
	for i := range windows {
		if err := w.Create(id(i), []byte("m")); err != nil {
			t.Fatal(err)
		}
		for range perWindow {
			if err := w.Append(id(i), value); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if m := s.db.Metrics(); m.Flush.Count == 0 {
		t.Fatalf("nothing was flushed out of the memtables: %s", m)
	}
	// The watermark passes the end of the first half of the windows.
	var expired []WindowID
	err = w.Ending(mtime.MinTimestamp, 1000, func(id WindowID) error {
		expired = append(expired, WindowID{KeyGroup: id.KeyGroup, End: id.End,
			Key: append([]byte(nil), id.Key...), Window: append([]byte(nil), id.Window...)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(expired) != windows/2 {
		t.Fatalf("%d windows end before 1000, want %d", len(expired), windows/2)
	}
	for i, e := range expired {
		if i > 0 && e.End < expired[i-1].End {
			t.Fatalf("index out of order at %d", i)
		}
		if err := w.Delete(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	n, err := s.Count(KindTriggerIndex)
	if err != nil || n != windows/2 {
		t.Errorf("%d windows indexed after collection, want %d (%v)", n, windows/2, err)
	}
	if n, _ := s.Count(KindTriggerWindow); n != windows/2*(perWindow+1) {
		t.Errorf("%d window records left, want %d", n, windows/2*(perWindow+1))
	}
	for i := range windows {
		got := 0
		w.Values(id(i), func([]byte) error { got++; return nil })
		if want := perWindow * (i / (windows / 2)); got != want {
			t.Fatalf("window %d has %d values, want %d", i, got, want)
		}
	}
	all := 0
	w.All(func(WindowID, []byte) error { all++; return nil })
	if all != windows/2 {
		t.Errorf("All saw %d windows, want %d", all, windows/2)
	}
}

// TestClearValuesOfSmallWindowsAddsNoRangeDeletion fires and clears many
// small windows between flushes, as a discarding trigger over many keys
// does: their values must go by point deletions (each range deletion in
// the pending batch is fragmented again by every later read), and read
// back empty, with new values after; a window of more than
// maxPointDeletes values is cleared by one range deletion.
func TestClearValuesOfSmallWindowsAddsNoRangeDeletion(t *testing.T) {
	w := memStore(t).NewTriggerWindows("gbk/0")
	for i := range 100 {
		id := winID(1, 99, fmt.Sprint("k", i), "W")
		w.Append(id, []byte("old"))
		if err := w.ClearValues(id); err != nil {
			t.Fatal(err)
		}
		w.Append(id, []byte("new"))
	}
	big := winID(1, 99, "big", "W")
	for range maxPointDeletes + 1 {
		w.Append(big, []byte("x"))
	}
	if n := batchRangeDeletions(t, w.batch); n != 0 {
		t.Fatalf("%d range deletions for clears of one-value windows", n)
	}
	if err := w.ClearValues(big); err != nil {
		t.Fatal(err)
	}
	if n := batchRangeDeletions(t, w.batch); n != 1 {
		t.Fatalf("%d range deletions after clearing %d values, want 1", n, maxPointDeletes+1)
	}
	for _, when := range []string{"before flush", "after flush"} {
		for i := range 100 {
			if got := values(t, w, winID(1, 99, fmt.Sprint("k", i), "W")); got != "new" {
				t.Fatalf("%s: window %d holds %q", when, i, got)
			}
		}
		if got := values(t, w, big); got != "" {
			t.Fatalf("%s: cleared big window holds %q", when, got)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}
