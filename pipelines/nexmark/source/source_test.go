package source

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/generator"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

func TestSplitBlocks(t *testing.T) {
	rows := func(i int) int64 {
		if i == 9 {
			return 107
		}
		return 100
	}
	all := Restriction{GenLo: 0, GenHi: 10, Start: 0, End: 107}
	for _, n := range []int{0, 1, 3, 4, 10, 50} {
		blocks := splitBlocks(all, n, rows)
		want := n
		if n == 0 || n > 10 {
			want = 10
		}
		if len(blocks) != want {
			t.Fatalf("%d splits: %d blocks", n, len(blocks))
		}
		next, events := 0, int64(0)
		for _, b := range blocks {
			if b.GenLo != next || b.GenHi <= b.GenLo {
				t.Fatalf("%d splits: blocks %+v do not tile the generators", n, blocks)
			}
			next = b.GenHi
			for i := b.GenLo; i < b.GenHi; i++ {
				if b.End < rows(i) {
					t.Fatalf("%d splits: block %+v cuts generator %d's %d rows", n, b, i, rows(i))
				}
				events += min(b.End, rows(i))
			}
		}
		if next != 10 || events != 1007 {
			t.Errorf("%d splits: blocks end at generator %d holding %d events; want 10 and 1007", n, next, events)
		}
	}
}

// TestHeldQueueExactlyOnce runs a rate-limited stream's rows as
// restrictions split at random rows, each with a queue of its own (as
// separate calls have), and checks that every event comes out once, held
// ones no earlier than their own row.
func TestHeldQueueExactlyOnce(t *testing.T) {
	c := config.Default()
	c.NumEvents, c.NumEventGenerators, c.IsRateLimited, c.ProbDelayedEvent = 30000, 5, true, 0.3
	g, err := generator.New(c)
	if err != nil {
		t.Fatal(err)
	}
	id := map[string]int64{} // event text -> id, to name what repeats
	for i := range g.Generators() {
		for n := range g.Count(i) {
			e, _ := g.Event(i, n)
			id[e.String()] = g.EventID(i, n)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 5 {
		seen := map[int64]int{}
		late := 0
		for _, block := range splitBlocks(Restriction{GenHi: g.Generators(), End: g.Rows()}, 2, g.Count) {
			cuts := []int64{block.Start}
			for p := block.Start + 1; p < block.End; p++ {
				if rng.IntN(1500) == 0 {
					cuts = append(cuts, p)
				}
			}
			cuts = append(cuts, block.End)
			for k := 0; k+1 < len(cuts); k++ {
				r := block
				r.Start, r.End = cuts[k], cuts[k+1]
				q := newHeldQueue(g, r)
				for n := r.Start; n < r.End; n++ {
					q.emitRow(r.GenLo, r.GenHi, n, func(ts beam.EventTime, e model.Event) {
						seen[id[e.String()]]++
						if ts.Milliseconds() < g.Watermark(n) {
							late++
						}
					})
				}
			}
		}
		if len(seen) != int(c.NumEvents) {
			t.Fatalf("trial %d: %d distinct events out of %d", trial, len(seen), c.NumEvents)
		}
		for k, v := range seen {
			if v != 1 {
				t.Fatalf("trial %d: event %d emitted %d times", trial, k, v)
			}
		}
		// Held events come out behind the watermark: that is their point.
		if late == 0 {
			t.Errorf("trial %d: no event came out late", trial)
		}
	}
}
