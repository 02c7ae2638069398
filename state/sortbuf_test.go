package state

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
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
			sb.add([]byte(k), []byte("v"+k), len(k))
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

// TestSortBufferOrdersRuns: writes chained into runs by a shared,
// length-prefixed prefix, interleaved and with a sequence number that
// grows, come out in bytes.Compare order of their whole keys, batch after
// batch (the buffer's index and arena reused).
func TestSortBufferOrdersRuns(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var sb sortBuffer
	seq := uint64(0)
	for round, nkeys := range []int{1, 7, 300, 5000} {
		var want []string
		for range 3000 {
			// A key of up to 20 bytes from a small alphabet, length-prefixed
			// so that no prefix is another's, in one of a few windows.
			r := rand.New(rand.NewPCG(uint64(rng.IntN(nkeys)), 9))
			key := make([]byte, r.IntN(20))
			for i := range key {
				key[i] = "\x00\x01ab\xff"[r.IntN(5)]
			}
			k := []byte("ns\x05")
			k = binary.BigEndian.AppendUint64(k, uint64(r.IntN(3)))
			k = binary.AppendUvarint(k, uint64(len(key)))
			k = append(k, key...)
			plen := len(k)
			seq += uint64(rng.IntN(3) + 1)
			k = binary.BigEndian.AppendUint64(k, seq)
			sb.add(k, []byte{byte(round)}, plen)
			want = append(want, string(k))
		}
		b, err := sb.batch(db)
		if err != nil {
			t.Fatal(err)
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
			if len(v) != 1 || v[0] != byte(round) {
				t.Fatalf("round %d: value %q of a key, want this round's", round, v)
			}
			got = append(got, string(k))
		}
		b.Close()
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d (%d keys): batch of %d writes out of order or incomplete (want %d)", round, nkeys, len(got), len(want))
		}
	}
}

// BenchmarkSortBufferShuffle sorts 4 MiB of shuffle keys of 1,000 keys
// in one window, as a group-by-key of small integers writes them.
func BenchmarkSortBufferShuffle(b *testing.B) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	st := &Store{db: db}
	sh := st.NewShuffle("stage-7/subtask-0")
	keys := make([][]byte, 70_000)
	for i := range keys {
		key := binary.AppendUvarint(nil, uint64(i%1000))
		keys[i] = binary.BigEndian.AppendUint64(sh.recordPrefix(nil, i%1000%128, mtime.EndOfGlobalWindowTime, nil, key), uint64(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range keys {
			sh.buf.add(k, []byte("v1234567"), len(k)-8)
		}
		pb, err := sh.buf.batch(db)
		if err != nil {
			b.Fatal(err)
		}
		pb.Close()
	}
}
