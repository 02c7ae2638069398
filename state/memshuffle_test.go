package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// shuffleOp is one step of a shuffle script: an add, or a fire at wm, or
// a barrier's flush.
type shuffleOp struct {
	add   *add
	wm    mtime.Time
	flush bool
}

// shuffleScript makes n steps of adds over a few key groups, windows and
// keys, with fires at rising watermarks and flushes among them when
// streaming, else only adds. It ends with a fire past every window.
func shuffleScript(rng *rand.Rand, n int, streaming bool) []shuffleOp {
	ends := []mtime.Time{9, 19, 29, mtime.EndOfGlobalWindowTime}
	var ops []shuffleOp
	wm := mtime.Time(0)
	for range n {
		switch p := rng.IntN(100); {
		case streaming && p < 8:
			wm += mtime.Time(rng.IntN(8))
			ops = append(ops, shuffleOp{wm: wm})
		case streaming && p < 11:
			ops = append(ops, shuffleOp{flush: true})
		default:
			end := ends[rng.IntN(len(ends))]
			v := strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(3)*rng.IntN(12))
			ops = append(ops, shuffleOp{add: &add{kg: rng.IntN(4), end: end, window: fmt.Sprint("w", end),
				key: string(rune('k' + rng.IntN(4))), ts: mtime.Time(rng.IntN(40)), value: v}})
		}
	}
	return append(ops, shuffleOp{wm: mtime.MaxTimestamp})
}

// runShuffleScript runs ops on a fresh store with the shuffle memory given
// and returns what each fire handed out, one line a group, the store and
// the shuffle.
func runShuffleScript(t *testing.T, ops []shuffleOp, memory int64, hold HoldOptions) ([]string, *Store, *Shuffle) {
	t.Helper()
	s, err := Open(Options{Dir: "db", FS: vfs.NewMem(), ShuffleMemory: memory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sh := s.NewShuffle("gbk/0")
	sh.Hold(hold)
	var out []string
	for i, op := range ops {
		var err error
		switch {
		case op.add != nil:
			x := op.add
			err = sh.Add(x.kg, x.end, []byte(x.window), []byte(x.key), x.ts, []byte(x.value))
		case op.flush:
			err = sh.Flush()
		default:
			out = append(out, fmt.Sprintf("fire %d", op.wm))
			err = sh.Fire(op.wm, func(g *Group) error {
				vs := make([]string, len(g.Values))
				for i, v := range g.Values {
					vs[i] = string(v)
				}
				out = append(out, fmt.Sprintf("%s/%s end=%d ts=[%d,%d] %s held=%t",
					g.Window, g.Key, g.End, g.MinTS, g.MaxTS, strings.Join(vs, ","), g.Rest != nil))
				return nil
			})
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return out, s, sh
}

// TestShuffleInMemoryFiresAsTheStore runs the same scripts on a shuffle
// that keeps no values in memory, one that keeps them all, and one whose
// memory runs out part way, with and without holding large groups: every
// fire hands out the same groups in the same order, values in the order
// they came, with the same timestamps; and once everything has fired, no
// shuffle memory is left reserved.
func TestShuffleInMemoryFiresAsTheStore(t *testing.T) {
	for seed := range 40 {
		streaming := seed%2 == 1
		ops := shuffleScript(rand.New(rand.NewPCG(uint64(seed), 7)), 400, streaming)
		for _, hold := range []HoldOptions{{}, {Above: 40, Readers: 1}} {
			want, _, _ := runShuffleScript(t, ops, -1, hold)
			for _, memory := range []int64{64 << 20, 40 << 10} {
				got, s, _ := runShuffleScript(t, ops, memory, hold)
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d, streaming %t, hold %d, memory %d: fired\n%s\nwant (the store's)\n%s",
						seed, streaming, hold.Above, memory, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if n := s.shuffleMem.Load(); n != 0 {
					t.Errorf("seed %d, memory %d: %d bytes of shuffle memory reserved after the last fire", seed, memory, n)
				}
			}
		}
	}
}

// TestShuffleKeepsValuesInMemoryUntilTheyDoNotFit: with room, a bounded
// input's values never reach the store (they fire from memory); past the
// store's shuffle memory they spill, every one, and fire from the store;
// a barrier's flush spills them too, so a snapshot holds them.
func TestShuffleKeepsValuesInMemoryUntilTheyDoNotFit(t *testing.T) {
	ops := shuffleScript(rand.New(rand.NewPCG(3, 7)), 2000, false)
	adds := ops[:len(ops)-1]
	for _, tc := range []struct {
		name     string
		memory   int64
		flush    bool
		inMemory bool
	}{
		{"room", 64 << 20, false, true},
		{"no room", 40 << 10, false, false},
		{"a barrier", 64 << 20, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := adds
			if tc.flush {
				script = append(slices.Clip(adds), shuffleOp{flush: true})
			}
			_, s, sh := runShuffleScript(t, script, tc.memory, HoldOptions{})
			reserved := s.shuffleMem.Load()
			if tc.inMemory != (sh.mem != nil) || tc.inMemory != (reserved > 0) {
				t.Fatalf("in memory %t, %d bytes reserved; want in memory %t", sh.mem != nil, reserved, tc.inMemory)
			}
			if n, err := s.NamespaceBytes("gbk/0"); err != nil || (tc.inMemory && n < reserved) {
				t.Errorf("NamespaceBytes = %d, %v; want the %d bytes held in memory counted", n, err, reserved)
			}
			if err := sh.commit(); err != nil { // what the sort buffer holds, as a fire would
				t.Fatal(err)
			}
			want := len(adds)
			if tc.inMemory {
				want = 0
			}
			if stored, err := s.Count(KindShuffle); err != nil || stored != want {
				t.Errorf("%d records in the store (%v), want %d", stored, err, want)
			}
		})
	}
}
