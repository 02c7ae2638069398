package state

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

func memStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(Options{Dir: "db", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type add struct {
	kg     int
	end    mtime.Time
	window string
	key    string
	ts     mtime.Time
	value  string
}

func fire(t *testing.T, sh *Shuffle, wm mtime.Time) []string {
	t.Helper()
	var out []string
	err := sh.Fire(wm, func(g *Group) error {
		var vs []string
		for _, v := range g.Values {
			vs = append(vs, string(v))
		}
		out = append(out, fmt.Sprintf("%s/%s end=%d ts=[%d,%d] %s", g.Window, g.Key, g.End, g.MinTS, g.MaxTS, strings.Join(vs, ",")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShuffleFiresClosedWindowsOnce is a scenario: values arrive across key
// groups and windows; each watermark fires exactly the groups whose window's
// last instant it has passed, each once, with values in arrival order. A
// watermark at a window's last instant does not fire it: an element of that
// timestamp may still come (an upstream hold at the end of the global
// window, where a GroupByKey puts its output, is one).
func TestShuffleFiresClosedWindowsOnce(t *testing.T) {
	sh := memStore(t).NewShuffle("stage/0")
	adds := []add{
		{3, 9, "w0", "a", 2, "a1"},
		{3, 19, "w1", "a", 12, "a2"},
		{3, 9, "w0", "a", 5, "a3"},
		{7, 9, "w0", "b", 7, "b1"},
		{3, 9, "w0", "c", 1, "c1"},
		{100, mtime.EndOfGlobalWindowTime, "g", "z", 0, "z1"},
	}
	for _, a := range adds {
		if err := sh.Add(a.kg, a.end, []byte(a.window), []byte(a.key), a.ts, []byte(a.value)); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		wm   mtime.Time
		want []string
	}{
		{8, nil},
		{9, nil},
		{10, []string{"w0/a end=9 ts=[2,5] a1,a3", "w0/c end=9 ts=[1,1] c1", "w0/b end=9 ts=[7,7] b1"}},
		{10, nil}, // fired groups are gone
		{100, []string{"w1/a end=19 ts=[12,12] a2"}},
		{mtime.EndOfGlobalWindowTime, nil},
		{mtime.MaxTimestamp, []string{fmt.Sprintf("g/z end=%d ts=[0,0] z1", mtime.EndOfGlobalWindowTime)}},
		{mtime.MaxTimestamp, nil},
	}
	for i, st := range steps {
		got := fire(t, sh, st.wm)
		if fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Errorf("step %d, watermark %d:\n got %q\nwant %q", i, st.wm, got, st.want)
		}
	}
}

// TestShuffleNamespacesAreApart: two subtasks' buffers never see each
// other's values, even in the same key group.
func TestShuffleNamespacesAreApart(t *testing.T) {
	s := memStore(t)
	a, b := s.NewShuffle("s1/0"), s.NewShuffle("s1/1")
	if err := a.Add(5, 9, []byte("w"), []byte("k"), 1, []byte("from-a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(5, 9, []byte("w"), []byte("k"), 1, []byte("from-b")); err != nil {
		t.Fatal(err)
	}
	if got := fire(t, a, mtime.MaxTimestamp); len(got) != 1 || !strings.HasSuffix(got[0], "from-a") {
		t.Errorf("a fired %q", got)
	}
	if got := fire(t, b, mtime.MaxTimestamp); len(got) != 1 || !strings.HasSuffix(got[0], "from-b") {
		t.Errorf("b fired %q", got)
	}
}

// TestShuffleSpillsPastMemtables writes far more than the memtables hold,
// so values go through sstables, and reads every one back.
func TestShuffleSpillsPastMemtables(t *testing.T) {
	s, err := Open(Options{Dir: "db", FS: vfs.NewMem(), MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sh := s.NewShuffle("big")
	value := []byte(strings.Repeat("v", 1000))
	const n = 20000 // 20 MB
	for i := range n {
		if err := sh.Add(i%128, 9, []byte("w"), []byte(fmt.Sprint("k", i%50)), mtime.Time(i), value); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			if err := sh.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	total := 0
	if err := sh.Fire(mtime.MaxTimestamp, func(g *Group) error { total += len(g.Values); return nil }); err != nil {
		t.Fatal(err)
	}
	if total != n {
		t.Errorf("fired %d values, want %d", total, n)
	}
}

func TestOpenReportsFailingDisk(t *testing.T) {
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.ErrInjected)
	_, err := Open(Options{Dir: "db", FS: fs})
	if err == nil || !errors.Is(err, errorfs.ErrInjected) || !strings.Contains(err.Error(), "state: open db") {
		t.Fatalf("Open on a failing disk = %v, want an error naming the store", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	if _, err := Open(Options{}); err == nil {
		t.Error("Open without a folder succeeded")
	}
	if _, err := Open(Options{Dir: "x", FS: vfs.NewMem(), MemTableSize: 10}); err == nil {
		t.Error("Open with a 10-byte memtable succeeded")
	}
}

// TestFailingDiskFailsWrites makes every write to the disk fail once the
// store is open, as a full disk does: buffering past the memtables must
// return an error that says the store failed, not stall or lose values.
func TestFailingDiskFailsWrites(t *testing.T) {
	broken := &errorfs.Toggle{Injector: errorfs.ErrInjected.If(errorfs.Writes)}
	s, err := Open(Options{Dir: "db", FS: errorfs.Wrap(vfs.NewMem(), broken), MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	broken.On()
	sh := s.NewShuffle("full")
	value := []byte(strings.Repeat("v", 1000))
	for i := range 100000 { // 100 MB, far past what the memtables hold
		err = sh.Add(i%128, 9, []byte("w"), []byte(fmt.Sprint("k", i)), mtime.Time(i), value)
		if err == nil && i%1000 == 0 {
			err = sh.Flush()
		}
		if err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("100 MB buffered on a disk that fails every write, and no error")
	}
	// Pebble reports the disk's error as text, so match the text.
	if !strings.Contains(err.Error(), errorfs.ErrInjected.Error()) || !strings.Contains(err.Error(), "store in db failed") {
		t.Fatalf("error %q does not say the store failed with the disk's error", err)
	}
}

// Shuffle records start namespace | kind | key group like every other
// kind, so Count finds them, and the last key group fires whole.
func TestShuffleRecordsCountedByKind(t *testing.T) {
	s := memStore(t)
	sh := s.NewShuffle("s1/0")
	for _, kg := range []int{0, 3, 1<<16 - 1} {
		if err := sh.Add(kg, 9, []byte("w"), []byte("k"), 1, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := sh.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Count(KindShuffle); err != nil || n != 3 {
		t.Fatalf("Count(KindShuffle) = %d, %v; want 3", n, err)
	}
	if got := fire(t, sh, mtime.MaxTimestamp); len(got) != 3 {
		t.Errorf("fired %q, want 3 groups", got)
	}
	if n, _ := s.Count(KindShuffle); n != 0 {
		t.Errorf("%d shuffle records left after firing, want 0", n)
	}
}
