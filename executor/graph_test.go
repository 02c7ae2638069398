package executor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// epochSource emits batches of one-byte elements holding the number of
// barriers it has forwarded so far, until it has forwarded want barriers.
type epochSource struct{ want int }

func (s *epochSource) Run(ctx context.Context, out *Output, inj *Injector) error {
	for epoch := 0; epoch < s.want; {
		if err := out.Emit(ctx, 0, [][]byte{{byte(epoch)}, {byte(epoch)}}); err != nil {
			return err
		}
		n, err := inj.Poll()
		if err != nil {
			return err
		}
		epoch = n
		time.Sleep(time.Millisecond)
	}
	if err := out.Watermark(ctx, mtime.MaxTimestamp); err != nil {
		return err
	}
	return nil
}

// epochCheck forwards its input and checks every element belongs to the
// epoch between the barriers it has completed: anything else means a
// barrier was completed before all its inputs delivered it, or data
// overtook one.
type epochCheck struct {
	name  string
	done  int
	seen  int
	wm    mtime.Time
	ended bool
}

func (c *epochCheck) Process(ctx context.Context, port int, elems [][]byte) error {
	for _, e := range elems {
		if int(e[0]) != c.done {
			return fmt.Errorf("%s: element of epoch %d processed after %d barriers", c.name, e[0], c.done)
		}
	}
	c.seen += len(elems)
	return nil
}

func (c *epochCheck) Watermark(ctx context.Context, port int, wm mtime.Time) error {
	if wm < c.wm {
		return fmt.Errorf("%s: watermark went back from %v to %v", c.name, c.wm, wm)
	}
	c.wm = wm
	return nil
}

func (c *epochCheck) Barrier(ctx context.Context, id BarrierID) error {
	if int(id) != c.done+1 {
		return fmt.Errorf("%s: barrier %d after %d", c.name, id, c.done)
	}
	c.done++
	return nil
}

func (c *epochCheck) Finish(ctx context.Context) error { c.ended = true; return nil }

func TestBarriersAlignAcrossStagesAndInputs(t *testing.T) {
	const barriers = 3
	var mu sync.Mutex
	acks := map[string]int{}
	var checks []*epochCheck
	newCheck := func(name string) *epochCheck {
		mu.Lock()
		defer mu.Unlock()
		c := &epochCheck{name: name}
		checks = append(checks, c)
		return c
	}
	key := func(e []byte) ([]byte, error) { return e, nil }
	g := &Graph{
		InboxSize: 2,
		Nodes: []*Node{
			{Name: "srcA", Parallelism: 2, Outputs: 1, NewSource: func(int, *Output) (Source, error) {
				return &epochSource{want: barriers}, nil
			}},
			{Name: "srcB", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) {
				return &epochSource{want: barriers}, nil
			}},
			{Name: "map", Parallelism: 3, Outputs: 1,
				Inputs: []NodeInput{{Port: 0, From: 0, Partition: Forward}},
				New: func(i int, o *Output) (Operator, error) {
					return &forward{c: newCheck(fmt.Sprint("map", i)), out: o}, nil
				}},
			{Name: "join", Parallelism: 2, Outputs: 1,
				Inputs: []NodeInput{
					{Port: 0, From: 2, Partition: Hash, Key: key},
					{Port: 1, From: 1, Partition: Broadcast},
				},
				New: func(i int, o *Output) (Operator, error) {
					return &forward{c: newCheck(fmt.Sprint("join", i)), out: o}, nil
				}},
			{Name: "sink", Parallelism: 1, Outputs: 1,
				Inputs: []NodeInput{{Port: 0, From: 3, Partition: Forward}, {Port: 0, From: 0, Partition: Forward}},
				New:    func(i int, o *Output) (Operator, error) { return &forward{c: newCheck("sink"), out: o}, nil }},
		},
		OnAck: func(node, sub int, id BarrierID) {
			mu.Lock()
			acks[fmt.Sprintf("%d/%d/%d", node, sub, id)]++
			mu.Unlock()
		},
	}
	bar := make(chan BarrierID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- g.Run(ctx, bar) }()
	for id := BarrierID(1); id <= barriers; id++ {
		bar <- id
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for ni, n := range g.Nodes {
		for sub := range n.Parallelism {
			for id := 1; id <= barriers; id++ {
				if got := acks[fmt.Sprintf("%d/%d/%d", ni, sub, id)]; got != 1 {
					t.Errorf("%s[%d] acknowledged barrier %d %d times, want 1", n.Name, sub, id, got)
				}
			}
		}
	}
	for _, c := range checks {
		if c.done != barriers || !c.ended || c.wm != mtime.MaxTimestamp {
			t.Errorf("%s: completed %d barriers, ended %v, watermark %v", c.name, c.done, c.ended, c.wm)
		}
	}
	if checks[len(checks)-1].seen == 0 {
		t.Error("sink saw no elements")
	}
}

// forward passes elements and watermarks through, checking them.
type forward struct {
	c   *epochCheck
	out *Output
}

func (f *forward) Process(ctx context.Context, port int, elems [][]byte) error {
	if err := f.c.Process(ctx, port, elems); err != nil {
		return err
	}
	return f.out.Emit(ctx, 0, elems)
}
func (f *forward) Watermark(ctx context.Context, port int, wm mtime.Time) error {
	return f.c.Watermark(ctx, port, wm)
}
func (f *forward) Barrier(ctx context.Context, id BarrierID) error { return f.c.Barrier(ctx, id) }
func (f *forward) Finish(ctx context.Context) error                { return f.c.Finish(ctx) }

// alwaysDue is a forward whose timer is always due, as an SDK stage whose
// SDF asks to resume its residuals at once, each bundle leaving another.
type alwaysDue struct {
	forward
	wakes int
}

func (a *alwaysDue) NextWake() (time.Time, bool) { return time.Now(), true }
func (a *alwaysDue) Wake(ctx context.Context, _ time.Time) error {
	a.wakes++
	return ctx.Err() // a starved graph ends at the test's deadline
}

// TestDueTimersDoNotStarveBarriers: an operator whose timer is always due
// still takes its data lane, and the barriers in it, between wakes (they
// starved once, and a Java unbounded source's job never completed a
// checkpoint).
func TestDueTimersDoNotStarveBarriers(t *testing.T) {
	const barriers = 3
	var busy *alwaysDue
	g := &Graph{
		InboxSize: 2,
		Nodes: []*Node{
			{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) {
				return &epochSource{want: barriers}, nil
			}},
			{Name: "busy", Parallelism: 1, Outputs: 1,
				Inputs: []NodeInput{{Port: 0, From: 0, Partition: Forward}},
				New: func(_ int, o *Output) (Operator, error) {
					busy = &alwaysDue{forward: forward{c: &epochCheck{name: "busy"}, out: o}}
					return busy, nil
				}},
		},
	}
	bar := make(chan BarrierID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- g.Run(ctx, bar) }()
	for id := BarrierID(1); id <= barriers; id++ {
		select {
		case bar <- id:
		case err := <-errc:
			t.Fatalf("the graph ended before barrier %d: %v", id, err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatalf("the graph: %v (the barriers starved behind the due timer)", err)
	}
	if busy.c.done != barriers || busy.c.seen == 0 || busy.wakes == 0 {
		t.Errorf("busy completed %d barriers, saw %d elements, woke %d times; want %d barriers, some of both",
			busy.c.done, busy.c.seen, busy.wakes, barriers)
	}
}
