package executor

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// kvIn is one input element: key, event time, and its window.
type kvIn struct {
	key        string
	ts         mtime.Time
	start, end mtime.Time
}

// listSource emits prepared elements, then the end of time.
type listSource [][]byte

func (l listSource) Run(ctx context.Context, out *Output, _ *Injector) error {
	if err := out.Emit(ctx, 0, l); err != nil {
		return err
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

func lpMeasure(b []byte) (int, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || len(b) < n+int(l) {
		return 0, wire.ErrShort
	}
	return n + int(l), nil
}

// runGBK groups elements and returns "key [start,end) ts=T n=N" per output.
func runGBK(t *testing.T, in []kvIn, ot pipepb.OutputTime_Enum, merging bool) []string {
	t.Helper()
	win := func(b []byte) (int, error) {
		_, n := binary.Uvarint(b[8:])
		return 8 + n, nil
	}
	kv := func(b []byte) (int, error) {
		n, err := lpMeasure(b)
		return n + 1, err
	}
	var elems [][]byte
	for i, e := range in {
		val := append(binary.AppendUvarint(nil, uint64(len(e.key))), e.key...)
		val = append(val, byte(i))
		elems = append(elems, wire.AppendWindowedValue(nil, e.ts,
			wire.AppendIntervalWindow(nil, e.start, e.end), []byte{wire.PaneNoFiring}, val))
	}
	var mu sync.Mutex
	var got [][]byte
	store, err := state.Open(state.Options{Dir: "gbk", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Graph{Nodes: []*Node{
		{Name: "src", Parallelism: 1, Outputs: 1, NewSource: func(int, *Output) (Source, error) { return listSource(elems), nil }},
		{Name: "gbk", Parallelism: 2, Outputs: 1,
			Inputs: []NodeInput{{From: 0, Partition: Hash, Key: func(e []byte) ([]byte, error) {
				wv, _, err := wire.NewCodec(win, kv).Decode(e, nil)
				if err != nil {
					return nil, err
				}
				k, _, err := wire.SplitKV(lpMeasure, wv.Value)
				return k, err
			}}},
			New: func(sub int, out *Output) (Operator, error) {
				return &GroupByKey{Name: "gbk", In: wire.NewCodec(win, kv), Key: lpMeasure,
					OutputTime: ot, Merging: merging, Buf: store.NewShuffle(fmt.Sprint("gbk/", sub)), Out: out}, nil
			}},
		{Name: "sink", Parallelism: 1, Inputs: []NodeInput{{From: 1}},
			New: func(int, *Output) (Operator, error) { return collect{&mu, &got}, nil }},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	iterable := func(b []byte) (int, error) {
		n := 4 + int(binary.BigEndian.Uint32(b))
		return n, nil
	}
	outCodec := wire.NewCodec(win, func(b []byte) (int, error) {
		k, err := lpMeasure(b)
		if err != nil {
			return 0, err
		}
		n, err := iterable(b[k:])
		return k + n, err
	})
	var lines []string
	for _, e := range got {
		wv, _, err := outCodec.Decode(e, nil)
		if err != nil {
			t.Fatal(err)
		}
		start, end, err := wire.DecodeIntervalWindow(wv.Windows[0])
		if err != nil {
			t.Fatal(err)
		}
		k, vals, _ := wire.SplitKV(lpMeasure, wv.Value)
		lines = append(lines, fmt.Sprintf("%s [%d,%d) ts=%d n=%d", k[1:], start, end, wv.Timestamp, binary.BigEndian.Uint32(vals)))
	}
	sort.Strings(lines)
	return lines
}

func TestGroupByKeyTimestampCombiners(t *testing.T) {
	in := []kvIn{{"a", 2, 0, 10}, {"a", 5, 0, 10}, {"b", 7, 0, 10}, {"a", 12, 10, 20}}
	tests := []struct {
		ot   pipepb.OutputTime_Enum
		want []string
	}{
		{pipepb.OutputTime_END_OF_WINDOW, []string{"a [0,10) ts=9 n=2", "a [10,20) ts=19 n=1", "b [0,10) ts=9 n=1"}},
		{pipepb.OutputTime_EARLIEST_IN_PANE, []string{"a [0,10) ts=2 n=2", "a [10,20) ts=12 n=1", "b [0,10) ts=7 n=1"}},
		{pipepb.OutputTime_LATEST_IN_PANE, []string{"a [0,10) ts=5 n=2", "a [10,20) ts=12 n=1", "b [0,10) ts=7 n=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.ot.String(), func(t *testing.T) {
			got := runGBK(t, in, tc.ot, false)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestGroupByKeyMergesSessions(t *testing.T) {
	const gap = 10
	s := func(k string, ts mtime.Time) kvIn { return kvIn{k, ts, ts, ts + gap} }
	tests := []struct {
		name string
		ot   pipepb.OutputTime_Enum
		in   []kvIn
		want []string
	}{
		{"overlapping", pipepb.OutputTime_END_OF_WINDOW, []kvIn{s("a", 1), s("a", 5)},
			[]string{"a [1,15) ts=14 n=2"}},
		{"adjacent stay apart", pipepb.OutputTime_END_OF_WINDOW, []kvIn{s("a", 0), s("a", 10)},
			[]string{"a [0,10) ts=9 n=1", "a [10,20) ts=19 n=1"}},
		{"out of order arrivals bridge a gap", pipepb.OutputTime_END_OF_WINDOW,
			[]kvIn{s("a", 16), s("a", 1), s("a", 8)},
			[]string{"a [1,26) ts=25 n=3"}},
		{"keys merge separately", pipepb.OutputTime_END_OF_WINDOW, []kvIn{s("a", 1), s("b", 5), s("a", 30)},
			[]string{"a [1,11) ts=10 n=1", "a [30,40) ts=39 n=1", "b [5,15) ts=14 n=1"}},
		{"earliest", pipepb.OutputTime_EARLIEST_IN_PANE, []kvIn{s("a", 5), s("a", 1), s("a", 9)},
			[]string{"a [1,19) ts=1 n=3"}},
		{"latest", pipepb.OutputTime_LATEST_IN_PANE, []kvIn{s("a", 5), s("a", 1), s("a", 9)},
			[]string{"a [1,19) ts=9 n=3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runGBK(t, tc.in, tc.ot, true)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}
