package executor

import (
	"context"
	"testing"
)

// TestOutputKeeps: a port may have its batch slice reused by the caller
// only when every edge copies the batch into buckets of its own (a hash
// edge to more than one consumer); and such an edge's consumers see the
// elements of the first batch intact after the slice was overwritten.
func TestOutputKeeps(t *testing.T) {
	chans := func(n int) []chan envelope {
		out := make([]chan envelope, n)
		for i := range out {
			out[i] = make(chan envelope, 4)
		}
		return out
	}
	edge := func(p Partition, consumers int) *edgeOut {
		return &edgeOut{part: p, to: chans(consumers), chIdx: make([]int, consumers), key: func(b []byte) ([]byte, error) { return b, nil }}
	}
	for _, tc := range []struct {
		name  string
		edges []*edgeOut
		keeps bool
	}{
		{"hash to two", []*edgeOut{edge(Hash, 2)}, false},
		{"two hash edges", []*edgeOut{edge(Hash, 2), edge(Hash, 3)}, false},
		{"hash to one", []*edgeOut{edge(Hash, 1)}, true},
		{"forward", []*edgeOut{edge(Forward, 2)}, true},
		{"broadcast", []*edgeOut{edge(Broadcast, 2)}, true},
		{"hash and forward", []*edgeOut{edge(Hash, 2), edge(Forward, 1)}, true},
	} {
		o := &Output{ports: [][]*edgeOut{tc.edges}}
		if got := o.Keeps(0); got != tc.keeps {
			t.Errorf("%s: Keeps = %v, want %v", tc.name, got, tc.keeps)
		}
	}
	if !(&Output{}).Keeps(3) {
		t.Error("Keeps of a port that does not exist: false, want true")
	}

	e := edge(Hash, 2)
	o := &Output{ports: [][]*edgeOut{{e}}}
	batch := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}
	if err := o.Emit(context.Background(), 0, batch); err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		batch[i] = []byte("overwritten")
	}
	got := map[string]bool{}
	for _, ch := range e.to {
		for len(ch) > 0 {
			for _, el := range (<-ch).msg.Elems {
				got[string(el)] = true
			}
		}
	}
	if len(got) != 4 || !got["a"] || !got["d"] {
		t.Errorf("the consumers got %v, want a, b, c and d", got)
	}
}
