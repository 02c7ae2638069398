package state

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// readAll reads a held group page by page and returns its values, which
// the tests make 4 bytes each.
func readAll(t *testing.T, s *Store, token []byte, max int) ([]string, int) {
	t.Helper()
	var out []string
	var cont []byte
	pages := 0
	for {
		page, next, err := s.ReadHeld(token, cont, max)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(next) > 0 && len(page) < max {
			t.Fatalf("page %d has %d bytes, under %d, and is not the last", pages, len(page), max)
		}
		for ; len(page) >= 4; page = page[4:] {
			out = append(out, string(page[:4]))
		}
		if len(next) == 0 {
			return out, pages
		}
		cont = next
	}
}

// countKeys counts the records in the store. (Count reads the kind where
// user state keeps it, right after the namespace; shuffle keys have the
// key group first.)
func countKeys(t *testing.T, s *Store) int {
	t.Helper()
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

func heldValues(from, to int) []string {
	var vs []string
	for i := from; i < to; i++ {
		vs = append(vs, fmt.Sprintf("v%03d", i))
	}
	return vs
}

func addValues(t testing.TB, sh *Shuffle, kg int, key string, vs []string) {
	t.Helper()
	for i, v := range vs {
		if err := sh.Add(kg, 9, []byte("w"), []byte(key), mtime.Time(i), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
}

type fired struct {
	key    string
	values []string
	rest   []byte
	minTS  mtime.Time
	maxTS  mtime.Time
}

func fireHeld(t testing.TB, sh *Shuffle, wm mtime.Time) map[string]fired {
	t.Helper()
	out := map[string]fired{}
	err := sh.Fire(wm, func(g *Group) error {
		f := fired{key: string(g.Key), rest: append([]byte(nil), g.Rest...), minTS: g.MinTS, maxTS: g.MaxTS}
		for _, v := range g.Values {
			f.values = append(f.values, string(v))
		}
		out[f.key] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShuffleHoldsLargeGroups is a scenario: a large and a small group
// fire; the large one hands out what fits and holds the rest, which two
// consumers read in pages, again as a retried bundle would, and release.
// Later fires skip it while held; the last release deletes it, and its
// token is then refused.
func TestShuffleHoldsLargeGroups(t *testing.T) {
	s := memStore(t)
	sh := s.NewShuffle("stage/0")
	sh.Hold(HoldOptions{Above: 10, Readers: 2})
	addValues(t, sh, 3, "big", heldValues(0, 100))
	addValues(t, sh, 3, "small", heldValues(0, 2))

	got := fireHeld(t, sh, 10)
	big, small := got["big"], got["small"]
	if strings.Join(big.values, ",") != "v000,v001" || len(big.rest) != TokenLen {
		t.Fatalf("big group: values %v, token %x; want v000,v001 and a token", big.values, big.rest)
	}
	if len(small.values) != 2 || small.rest != nil {
		t.Fatalf("small group: values %v, token %x; want both values inline", small.values, small.rest)
	}
	for range 2 { // a retried bundle reads it again from the start
		rest, pages := readAll(t, s, big.rest, 40)
		if want := heldValues(2, 100); strings.Join(rest, ",") != strings.Join(want, ",") {
			t.Fatalf("held values %v, want %v", rest, want)
		}
		if pages != 10 {
			t.Errorf("%d pages of 40 bytes for 392 bytes, want 10", pages)
		}
	}
	if got := sh.HeldStats(); got != (HeldStats{Groups: 1, Pages: 20}) {
		t.Errorf("stats %+v", got)
	}
	var each []string
	if err := s.EachHeld(big.rest, func(v []byte) error { each = append(each, string(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := heldValues(2, 100); strings.Join(each, ",") != strings.Join(want, ",") {
		t.Errorf("EachHeld gave %v, want %v", each, want)
	}

	// Fired again, the held group stays out; a late value of its key fires
	// alone.
	addValues(t, sh, 3, "big", []string{"late"})
	if got := fireHeld(t, sh, 10); len(got) != 1 || strings.Join(got["big"].values, ",") != "late" || got["big"].rest != nil {
		t.Fatalf("second fire: %+v, want only the late value", got)
	}
	if n := countKeys(t, s); n != 98 {
		t.Errorf("%d shuffle records after the second fire, want the 98 held", n)
	}

	if err := s.Release(big.rest); err != nil {
		t.Fatal(err)
	}
	if rest, _ := readAll(t, s, big.rest, 1<<20); len(rest) != 98 {
		t.Fatalf("after one of two releases %d values are readable, want 98", len(rest))
	}
	if err := s.Release(big.rest); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ReadHeld(big.rest, nil, 1<<20); !errors.Is(err, ErrReleased) {
		t.Errorf("read after the last release: %v, want ErrReleased", err)
	}
	if err := s.EachHeld(big.rest, func([]byte) error { return nil }); !errors.Is(err, ErrReleased) {
		t.Errorf("EachHeld after the last release: %v, want ErrReleased", err)
	}
	if err := s.Release(big.rest); !errors.Is(err, ErrReleased) {
		t.Errorf("third release: %v, want ErrReleased", err)
	}
	if n := countKeys(t, s); n != 0 || s.Held() != 0 {
		t.Errorf("%d shuffle records and %d held groups after release, want none", n, s.Held())
	}
	if got := fireHeld(t, sh, mtime.MaxTimestamp); len(got) != 0 {
		t.Errorf("fire after release: %+v, want nothing", got)
	}
	if got := sh.HeldStats(); got.Released != 1 {
		t.Errorf("stats %+v, want one group released", got)
	}
}

// TestShuffleHeldTimestamps checks a held group's timestamps cover every
// value when asked, and only the inline ones otherwise.
func TestShuffleHeldTimestamps(t *testing.T) {
	for _, all := range []bool{true, false} {
		s := memStore(t)
		sh := s.NewShuffle("stage/0")
		sh.Hold(HoldOptions{Above: 10, Readers: 1, Timestamps: all})
		addValues(t, sh, 1, "k", heldValues(0, 50))
		got := fireHeld(t, sh, 10)["k"]
		want := mtime.Time(1)
		if all {
			want = 49
		}
		if got.minTS != 0 || got.maxTS != want {
			t.Errorf("timestamps %v: [%d, %d], want [0, %d]", all, got.minTS, got.maxTS, want)
		}
		if rest, _ := readAll(t, s, got.rest, 1<<20); len(rest) != 48 {
			t.Errorf("timestamps %v: %d held values, want 48", all, len(rest))
		}
	}
}

// TestReadHeldRefusesBadTokens checks tokens and continuations that do not
// name a held group are refused, not read as some other range.
func TestReadHeldRefusesBadTokens(t *testing.T) {
	s := memStore(t)
	sh := s.NewShuffle("stage/0")
	sh.Hold(HoldOptions{Above: 4, Readers: 1})
	addValues(t, sh, 1, "k", heldValues(0, 5))
	tok := fireHeld(t, sh, 10)["k"].rest
	for _, c := range []struct {
		token, cont []byte
		want        string
	}{
		{[]byte("nonsense"), nil, "not a held group's token"},
		{append([]byte{tokenTag}, 0, 0, 0, 0, 0, 0, 0, 99), nil, ErrReleased.Error()},
		{tok, []byte{1}, "malformed continuation"},
		{tok, []byte{0, 0, 0, 0, 0, 0, 0, 0}, "out of held group"},
	} {
		if _, _, err := s.ReadHeld(c.token, c.cont, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadHeld(%x, %x): %v, want %q", c.token, c.cont, err, c.want)
		}
	}
}
