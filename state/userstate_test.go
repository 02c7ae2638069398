package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func openMem(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{Dir: "mem", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func cell(key, win string) Cell {
	return Cell{KeyGroup: 3, Window: []byte(win), Key: []byte(key), Transform: "t", StateID: "s"}
}

func TestBagReadYourWritesAndCommit(t *testing.T) {
	u := openMem(t).NewUserState("stage/0")
	tx := u.Begin()
	c := cell("k", "")
	if err := tx.BagAppend(c, 100, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := tx.BagAppend(c, 100, []byte("bc")); err != nil {
		t.Fatal(err)
	}
	if got, _ := tx.BagRead(c); string(got) != "abc" {
		t.Fatalf("in txn: got %q, want abc", got)
	}
	// Another key and another window are separate cells.
	if got, _ := tx.BagRead(cell("k", "w")); len(got) != 0 {
		t.Fatalf("other window: got %q", got)
	}
	if got, _ := tx.BagRead(cell("kk", "")); len(got) != 0 {
		t.Fatalf("other key: got %q", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx = u.Begin()
	defer tx.Abort()
	if got, _ := tx.BagRead(c); string(got) != "abc" {
		t.Fatalf("after commit: got %q", got)
	}
}

func TestAbortLeavesNoTrace(t *testing.T) {
	u := openMem(t).NewUserState("stage/0")
	c := cell("k", "")
	tx := u.Begin()
	tx.BagAppend(c, 100, []byte("kept"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx = u.Begin()
	tx.BagClear(c)
	tx.BagAppend(c, 100, []byte("lost"))
	tx.Abort() // a failed bundle
	tx = u.Begin()
	defer tx.Abort()
	if got, _ := tx.BagRead(c); string(got) != "kept" {
		t.Fatalf("got %q, want kept", got)
	}
	if err := tx.BagAppend(c, 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	tx.Abort()
	if err := tx.BagAppend(c, 1, []byte("x")); err == nil {
		t.Fatal("append after Abort succeeded")
	}
}

func TestBagClearThenAppend(t *testing.T) {
	u := openMem(t).NewUserState("s")
	c := cell("k", "")
	tx := u.Begin()
	defer tx.Abort()
	tx.BagAppend(c, 100, []byte("old"))
	tx.BagClear(c)
	tx.BagAppend(c, 100, []byte("new"))
	if got, _ := tx.BagRead(c); string(got) != "new" {
		t.Fatalf("got %q, want new", got)
	}
}

func TestMultimap(t *testing.T) {
	u := openMem(t).NewUserState("s")
	c := cell("k", "")
	tx := u.Begin()
	defer tx.Abort()
	for _, kv := range [][2]string{{"b", "1"}, {"a", "2"}, {"b", "3"}, {"c", ""}} {
		if err := tx.MultimapAppend(c, 100, []byte(kv[0]), []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := tx.MultimapKeys(c); string(got) != "abc" {
		t.Fatalf("keys %q, want abc", got)
	}
	if got, _ := tx.MultimapRead(c, []byte("b")); string(got) != "13" {
		t.Fatalf("b: %q, want 13", got)
	}
	tx.MultimapClearKey(c, []byte("b"))
	if got, _ := tx.MultimapKeys(c); string(got) != "ac" {
		t.Fatalf("keys after clearing b: %q, want ac", got)
	}
	tx.MultimapClear(c)
	if got, _ := tx.MultimapKeys(c); len(got) != 0 {
		t.Fatalf("keys after clear: %q", got)
	}
}

func TestOrderedList(t *testing.T) {
	u := openMem(t).NewUserState("s")
	c := cell("k", "")
	tx := u.Begin()
	defer tx.Abort()
	for _, e := range []struct {
		k int64
		v string
	}{{5, "e"}, {-3, "a"}, {5, "f"}, {0, "c"}, {1 << 40, "z"}} {
		if err := tx.OrderedAppend(c, 100, e.k, []byte(e.v)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(lo, hi int64) string {
		var b bytes.Buffer
		if err := tx.OrderedRead(c, lo, hi, func(_ int64, v []byte) error { b.Write(v); return nil }); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	tests := []struct {
		lo, hi int64
		want   string
	}{
		{-1 << 62, 1 << 62, "acefz"},
		{0, 5, "c"},
		{0, 6, "cef"},
		{-3, -2, "a"},
		{6, 6, ""},
	}
	for _, tt := range tests {
		if got := read(tt.lo, tt.hi); got != tt.want {
			t.Errorf("[%d,%d): got %q, want %q", tt.lo, tt.hi, got, tt.want)
		}
	}
	tx.OrderedClear(c, 0, 6)
	if got := read(-1<<62, 1<<62); got != "az" {
		t.Errorf("after clearing [0,6): %q, want az", got)
	}
}

func TestCollectDeletesExpiredWindowsOnly(t *testing.T) {
	u := openMem(t).NewUserState("s")
	early, late := cell("k", "w1"), cell("k", "w2")
	tx := u.Begin()
	tx.BagAppend(early, 10, []byte("x"))
	tx.MultimapAppend(early, 10, []byte("m"), []byte("y"))
	tx.BagAppend(late, 20, []byte("z"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, err := u.Collect(10); err != nil || n != 0 {
		t.Fatalf("Collect(10) = %d, %v; want 0 (expiry 10 is not before 10)", n, err)
	}
	if n, err := u.Collect(mtime.Time(11)); err != nil || n != 1 {
		t.Fatalf("Collect(11) = %d, %v; want 1", n, err)
	}
	tx = u.Begin()
	defer tx.Abort()
	if got, _ := tx.BagRead(early); len(got) != 0 {
		t.Errorf("expired bag still holds %q", got)
	}
	if got, _ := tx.MultimapKeys(early); len(got) != 0 {
		t.Errorf("expired multimap still holds %q", got)
	}
	if got, _ := tx.BagRead(late); string(got) != "z" {
		t.Errorf("live bag holds %q, want z", got)
	}
}

// records counts every record of u's namespace.
func records(t *testing.T, u *UserState) int {
	t.Helper()
	it, err := u.db.NewIter(&pebble.IterOptions{LowerBound: u.ns, UpperBound: prefixEnd(u.ns)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	return n
}

// TestUserStateStaysBoundedOverManyWindows runs a streaming job's state
// pattern for many one-second windows: every window's keys append to bags
// and maps and never clear them, and the watermark moves on. Collection at
// each watermark keeps the store at a few windows' worth of records.
func TestUserStateStaysBoundedOverManyWindows(t *testing.T) {
	u := openMem(t).NewUserState("s")
	const keys, windows = 20, 200
	most := 0
	for w := 0; w < windows; w++ {
		end := mtime.Time((w + 1) * 1000)
		win := wireWindow(end-1000, end)
		tx := u.Begin()
		for k := 0; k < keys; k++ {
			c := Cell{KeyGroup: k % 7, Window: win, Key: []byte{byte(k)}, Transform: "t", StateID: "bag"}
			if err := tx.BagAppend(c, end-1, []byte("v")); err != nil {
				t.Fatal(err)
			}
			c.StateID = "map"
			if err := tx.MultimapAppend(c, end-1, []byte("mk"), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// The watermark trails the data by one window.
		if _, err := u.Collect(end - 1000); err != nil {
			t.Fatal(err)
		}
		most = max(most, records(t, u))
	}
	// Two windows of 20 keys, each with a bag, a map entry and an index
	// record, is 120 records.
	if most > 2*keys*3 {
		t.Fatalf("store held %d records at most over %d windows, want at most %d", most, windows, 2*keys*3)
	}
	if _, err := u.Collect(mtime.MaxTimestamp); err != nil {
		t.Fatal(err)
	}
	if n := records(t, u); n != 0 {
		t.Fatalf("%d records left after the end of time", n)
	}
}

// wireWindow encodes the interval window [start, end) as Beam does.
func wireWindow(start, end mtime.Time) []byte {
	b := appendTime(nil, end)
	return binary.AppendUvarint(b, uint64(end-start))
}

// rangeDeletions flushes u's store and returns how many range deletions its
// tables hold.
func rangeDeletions(t *testing.T, u *UserState) uint64 {
	t.Helper()
	if err := u.db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := u.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, level := range levels {
		for _, tbl := range level {
			n += tbl.Properties.NumRangeDeletions
		}
	}
	return n
}

// TestCollectInSmallSteps collects while the watermark moves a millisecond
// at a time, as behind an aligned source, with state written between the
// collections, some of it late (behind what was already collected). After
// every step exactly the scopes that expired before the watermark are gone,
// and the many small collections leave no range deletion behind.
func TestCollectInSmallSteps(t *testing.T) {
	u := openMem(t).NewUserState("s")
	const keys, windows = 4, 30
	type scope struct {
		c      Cell
		expiry mtime.Time
	}
	var scopes []scope
	write := func(expiry mtime.Time, win string) {
		t.Helper()
		tx := u.Begin()
		for k := range keys {
			c := Cell{KeyGroup: k % 3, Window: []byte(win), Key: []byte{byte(k)}, Transform: "t", StateID: "bag"}
			if err := tx.BagAppend(c, expiry, []byte("v")); err != nil {
				t.Fatal(err)
			}
			m := c
			m.StateID = "map"
			if err := tx.MultimapAppend(m, expiry, []byte("mk"), []byte("v")); err != nil {
				t.Fatal(err)
			}
			o := c
			o.StateID = "list"
			if err := tx.OrderedAppend(o, expiry, int64(k), []byte("v")); err != nil {
				t.Fatal(err)
			}
			scopes = append(scopes, scope{c, expiry})
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// Windows expire 7 ms apart; each is written a few steps before the
	// watermark reaches it.
	next := 0
	for wm := mtime.Time(0); wm <= 7*windows+10; wm++ {
		for ; next < windows && mtime.Time(7*next) <= wm+20; next++ {
			write(mtime.Time(7*next+3), fmt.Sprint("w", next))
		}
		if wm == 100 {
			// A late write to a window that expired at 50: the next
			// collection must still find it.
			write(50, "late")
		}
		if _, err := u.Collect(wm); err != nil {
			t.Fatal(err)
		}
		tx := u.Begin()
		for _, s := range scopes {
			got, err := tx.BagRead(s.c)
			if err != nil {
				t.Fatal(err)
			}
			if live := s.expiry >= wm; live != (len(got) > 0) {
				t.Fatalf("watermark %d: scope %q/%q expiring at %d holds %q", wm, s.c.Window, s.c.Key, s.expiry, got)
			}
		}
		tx.Abort()
	}
	if n := records(t, u); n != 0 {
		t.Fatalf("%d records left after every window expired", n)
	}
	if n := rangeDeletions(t, u); n != 0 {
		t.Fatalf("small collections left %d range deletions, want none", n)
	}
}

// TestCollectLargeScope deletes a scope of more than maxPointDeletes
// records with one range deletion, and one of at most that many record by
// record.
func TestCollectLargeScope(t *testing.T) {
	for _, tc := range []struct {
		appends int
		ranges  uint64
	}{{1, 0}, {maxPointDeletes, 0}, {maxPointDeletes + 1, 1}, {1000, 1}} {
		t.Run(fmt.Sprint(tc.appends), func(t *testing.T) {
			u := openMem(t).NewUserState("s")
			big, small := cell("big", "w"), cell("small", "w")
			tx := u.Begin()
			for range tc.appends {
				if err := tx.BagAppend(big, 10, []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.BagAppend(small, 10, []byte("v")); err != nil {
				t.Fatal(err)
			}
			// A scope next to the big one, in key order, that stays.
			if err := tx.BagAppend(cell("bigger", "w"), 20, []byte("kept")); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if n, err := u.Collect(11); err != nil || n != 2 {
				t.Fatalf("Collect(11) = %d, %v; want 2", n, err)
			}
			tx = u.Begin()
			defer tx.Abort()
			if got, _ := tx.BagRead(cell("bigger", "w")); string(got) != "kept" {
				t.Fatalf("live scope holds %q, want kept", got)
			}
			// The live scope's bag record and its index record.
			if n := records(t, u); n != 2 {
				t.Fatalf("%d records left, want 2", n)
			}
			if n := rangeDeletions(t, u); n != tc.ranges {
				t.Fatalf("%d range deletions, want %d", n, tc.ranges)
			}
		})
	}
}

func TestUserUsage(t *testing.T) {
	s := openMem(t)
	for _, ns := range []string{"a", "b"} {
		u := s.NewUserState(ns)
		tx := u.Begin()
		tx.BagAppend(cell("k", "w1"), 10, []byte("x"))
		tx.BagAppend(cell("k", "w1"), 10, []byte("y"))
		tx.BagAppend(cell("k", "w2"), 20, []byte("z"))
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.UserUsage()
	if err != nil {
		t.Fatal(err)
	}
	n, b, _ := s.Usage(KindUserState)
	scopes, _ := s.Count(KindUserGC)
	if want := (UserUsage{Records: n, Bytes: b, Scopes: scopes}); got != want || got.Records != 6 || got.Scopes != 4 {
		t.Fatalf("UserUsage = %+v, want %+v with 6 records and 4 scopes", got, want)
	}
}

// TestNamespaceBytes checks a namespace's size counts its records, all
// kinds, and none of a namespace whose name it prefixes.
func TestNamespaceBytes(t *testing.T) {
	s := openMem(t)
	sizes := map[string]int64{}
	for _, ns := range []string{"st/1", "st/10", "other"} {
		u := s.NewUserState(ns)
		tx := u.Begin()
		for i := range len(ns) {
			tx.BagAppend(cell("k", "w"), 10, []byte{byte(i)})
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	_, total, err := s.Usage(KindUserState)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, ns := range []string{"st/1", "st/10", "other", "empty"} {
		n, err := s.NamespaceBytes(ns)
		if err != nil {
			t.Fatal(err)
		}
		sizes[ns] = n
		sum += n
	}
	if sizes["empty"] != 0 || sizes["st/1"] <= 0 || sizes["st/10"] <= sizes["st/1"] {
		t.Errorf("sizes %v: want none for empty, and st/10 (more records, longer name) above st/1", sizes)
	}
	// The user state's GC records are in the namespaces too.
	gc, _, _ := s.Usage(KindUserGC)
	if sum < total || gc == 0 && sum != total {
		t.Errorf("namespaces add up to %d bytes, user state alone is %d", sum, total)
	}
}

// TestClearOfSmallCellsAddsNoRangeDeletion rewrites many value-like cells
// in one transaction, as a bundle over many keys of a value state does:
// clear, then append. The clears must be point deletions (a range
// deletion in the batch is fragmented again by every later read of the
// transaction), and the cells must read back their new values, also after
// commit; a cell of more than maxPointDeletes records is still cleared,
// by one range deletion.
func TestClearOfSmallCellsAddsNoRangeDeletion(t *testing.T) {
	u := openMem(t).NewUserState("s")
	tx := u.Begin()
	for i := range 200 {
		c := cell(fmt.Sprint(i), "")
		tx.BagAppend(c, 100, []byte("old"))
		if err := tx.BagClear(c); err != nil {
			t.Fatal(err)
		}
		tx.BagAppend(c, 100, []byte(fmt.Sprint("new", i)))
	}
	big := cell("big", "")
	for range maxPointDeletes + 1 {
		tx.BagAppend(big, 100, []byte("x"))
	}
	if n := batchRangeDeletions(t, tx.batch); n != 0 {
		t.Fatalf("%d range deletions for clears of one-record cells", n)
	}
	if err := tx.BagClear(big); err != nil {
		t.Fatal(err)
	}
	if n := batchRangeDeletions(t, tx.batch); n != 1 {
		t.Fatalf("%d range deletions after clearing a cell of %d records, want 1", n, maxPointDeletes+1)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx = u.Begin()
	defer tx.Abort()
	for i := range 200 {
		if got, _ := tx.BagRead(cell(fmt.Sprint(i), "")); string(got) != fmt.Sprint("new", i) {
			t.Fatalf("cell %d reads %q", i, got)
		}
	}
	if got, _ := tx.BagRead(big); len(got) != 0 {
		t.Fatalf("cleared big cell reads %q", got)
	}
}

func batchRangeDeletions(t *testing.T, b *pebble.Batch) int {
	t.Helper()
	n := 0
	r := b.Reader()
	for {
		kind, _, _, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return n
		}
		if kind == pebble.InternalKeyKindRangeDelete {
			n++
		}
	}
}
