package executor

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

func TestSpreadWatch(t *testing.T) {
	const min, max = mtime.MinTimestamp, mtime.MaxTimestamp
	for _, tc := range []struct {
		name  string
		steps [][]mtime.Time // producer watermarks, one report per step
		warns int
	}{
		{"close together", [][]mtime.Time{{0, 50}, {100, 140}}, 0},
		{"one far ahead", [][]mtime.Time{{0, 101}}, 1},
		{"stays far ahead: one warning", [][]mtime.Time{{0, 101}, {10, 200}, {20, 300}}, 1},
		{"falls back below half, then apart again", [][]mtime.Time{{0, 101}, {60, 100}, {60, 200}}, 2},
		{"between half and the threshold: still disarmed", [][]mtime.Time{{0, 101}, {40, 100}, {40, 200}}, 1},
		{"a producer without a watermark yet", [][]mtime.Time{{min, 1000}}, 0},
		{"an ended producer", [][]mtime.Time{{max, 0}}, 0},
		{"three producers, the slowest counts", [][]mtime.Time{{500, 0, 450}}, 1},
	} {
		var got []string
		w := newSpreadWatch(0, "join", 1, 100*time.Millisecond, func(_ int, m string) { got = append(got, m) })
		for _, s := range tc.steps {
			w.observe(0, s)
		}
		if len(got) != tc.warns {
			t.Errorf("%s: %d warnings %q, want %d", tc.name, len(got), got, tc.warns)
		}
		for _, m := range got {
			if !strings.Contains(m, "join") || !strings.Contains(m, "apart") {
				t.Errorf("%s: warning %q does not name the node and the spread", tc.name, m)
			}
		}
	}
	// A subtask that lags behind another does not re-arm the warning.
	var got []string
	w := newSpreadWatch(0, "join", 2, 100*time.Millisecond, func(_ int, m string) { got = append(got, m) })
	w.observe(0, []mtime.Time{0, 200})
	w.observe(1, []mtime.Time{0, 10})
	w.observe(0, []mtime.Time{0, 300})
	if len(got) != 1 {
		t.Errorf("two subtasks: %d warnings, want 1", len(got))
	}
	if newSpreadWatch(0, "x", 1, 0, func(int, string) {}) != nil {
		t.Error("a zero threshold watches")
	}
}

// wmSource emits watermarks from a list, then ends once until is closed.
type wmSource struct {
	wms   []mtime.Time
	until <-chan struct{}
}

func (s wmSource) Run(ctx context.Context, out *Output, _ *Injector) error {
	for _, wm := range s.wms {
		if err := out.Watermark(ctx, wm); err != nil {
			return err
		}
	}
	select {
	case <-s.until:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A node fed by two sources hears of their spread through the graph; a
// node fed by one never does.
func TestGraphWarnsOfInputSpread(t *testing.T) {
	var mu sync.Mutex
	var warns []string
	var nodes []int
	var got [][]byte
	// The sources stay open until the warning: an ended input is behind
	// nothing, and no spread is seen before both have a watermark.
	warned := make(chan struct{})
	g := &Graph{SpreadWarning: time.Minute,
		Warn: func(node int, m string) {
			mu.Lock()
			defer mu.Unlock()
			if len(warns) == 0 {
				close(warned)
			}
			warns, nodes = append(warns, m), append(nodes, node)
		},
		Nodes: []*Node{
			{Name: "slow", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) {
				return wmSource{[]mtime.Time{1000, 2000}, warned}, nil
			}},
			{Name: "fast", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) {
				return wmSource{[]mtime.Time{1000, 2 * 3600 * 1000}, warned}, nil
			}},
			{Name: "join", Parallelism: 2, Outputs: 1, Inputs: []NodeInput{{From: 0}, {From: 1}},
				New: func(_ int, out *Output) (Operator, error) { return &Flatten{Out: out}, nil }},
			{Name: "after", Parallelism: 1, Inputs: []NodeInput{{From: 2}},
				New: func(int, *Output) (Operator, error) { return collect{&mu, &got}, nil }},
		}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0], "join:") || nodes[0] != 2 {
		t.Errorf("warnings %q of nodes %v, want one about join, node 2", warns, nodes)
	}
}
