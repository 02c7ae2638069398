package executor

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/wire"
)

// TestGroupByKeyDropsExpiredWindows feeds the default-trigger group an
// element for a window the watermark has passed: it is dropped, counted,
// logged at a bounded rate and written to the dead letter, and never
// reaches the output.
func TestGroupByKeyDropsExpiredWindows(t *testing.T) {
	store, err := state.Open(state.Options{Dir: "late", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var dl bytes.Buffer
	var logs []string
	clock := time.UnixMilli(1_000_000)
	late := &LateData{DeadLetter: &dl, Now: func() time.Time { return clock },
		Logf: func(_ *TransformLate, f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	ch := make(chan envelope, 100)
	out := &Output{ports: [][]*edgeOut{{{part: Forward, to: []chan envelope{ch}, chIdx: []int{0}}}}}
	g := &GroupByKey{Name: "Count/GBK", In: wire.NewCodec(ivMeasure, func(b []byte) (int, error) { return len(b), nil }),
		Key: lpMeasure, OutputTime: pipepb.OutputTime_END_OF_WINDOW, Buf: store.NewShuffle("gbk/0"), Out: out,
		Late: late.Transform("e7", "Count/GBK"), Now: func() time.Time { return clock }}
	ctx := context.Background()
	elem := func(ts, start, end mtime.Time) []byte {
		val := append(binary.AppendUvarint(nil, 1), 'k', 'v')
		return wire.AppendWindowedValue(nil, ts, wire.AppendIntervalWindow(nil, start, end), []byte{wire.PaneNoFiring}, val)
	}
	if err := g.Process(ctx, 0, [][]byte{elem(10, 0, 100)}); err != nil {
		t.Fatal(err)
	}
	if err := g.Watermark(ctx, 0, 150); err != nil {
		t.Fatal(err)
	}
	// Three late elements in one second: one message; one within the window
	// still open at 150 is kept.
	for range 3 {
		if err := g.Process(ctx, 0, [][]byte{elem(20, 0, 100)}); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(300 * time.Millisecond)
	}
	if err := g.Process(ctx, 0, [][]byte{elem(160, 100, 200)}); err != nil {
		t.Fatal(err)
	}
	if err := g.Watermark(ctx, 0, mtime.MaxTimestamp); err != nil {
		t.Fatal(err)
	}
	var panes []string
	for len(ch) > 0 {
		if env := <-ch; env.msg.Kind == KindData {
			for _, e := range env.msg.Elems {
				panes = append(panes, paneString(t, e))
			}
		}
	}
	if want := "k@100 ON_TIME 0/0 first=true last=true n=1 ts=99,k@200 ON_TIME 0/0 first=true last=true n=1 ts=199"; strings.Join(panes, ",") != want {
		t.Errorf("panes %q, want %q", panes, want)
	}
	if g.Dropped != 3 {
		t.Errorf("dropped %d, want 3", g.Dropped)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "Count/GBK dropped 1 late element") ||
		!strings.Contains(logs[0], "window [1970-01-01T00:00:00Z, 1970-01-01T00:00:00.1Z)") ||
		!strings.Contains(logs[0], "130ms behind the watermark") {
		t.Errorf("messages %q", logs)
	}
	if err := late.Close(); err != nil {
		t.Fatal(err)
	}
	if len(logs) != 2 || !strings.Contains(logs[1], "dropped 3 late element(s) (2 since the last message)") {
		t.Errorf("messages after close %q", logs)
	}
	lines := strings.Split(strings.TrimSpace(dl.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("dead letter has %d lines, want 3:\n%s", len(lines), dl.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"transform": "Count/GBK", "transform_id": "e7", "reason": "late", "timestamp_ms": 20.0,
		"key": "AWs=", "value": "dg==", "watermark_ms": 150.0, "lateness_ms": 130.0, "allowed_lateness_ms": 0.0}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("dead letter %s = %v, want %v", k, rec[k], v)
		}
	}
	if w := rec["window"].(map[string]any); w["start_ms"] != 0.0 || w["end_ms"] != 100.0 {
		t.Errorf("dead letter window %v", w)
	}
	if p := rec["pane"].(map[string]any); p["timing"] != "UNKNOWN" || p["first"] != true {
		t.Errorf("dead letter pane %v", p)
	}
	got := map[string]string{}
	for _, mi := range late.MonitoringInfos() {
		got[mi.GetLabels()["NAME"]+"/"+mi.GetLabels()["PTRANSFORM"]] = fmt.Sprintf("%x", mi.GetPayload())
	}
	// 3 dropped; arrivals 10, 20, 20, 20, 160 ms before 1,000,000 (+ up to 900 ms).
	if got["dropped_late_elements/e7"] != "03" {
		t.Errorf("dropped counter payload %s, want 03", got["dropped_late_elements/e7"])
	}
	for _, n := range []string{"arrival_delay_ms", "arrival_delay_ms_p50", "arrival_delay_ms_p999", "arrival_delay_ms_max"} {
		if _, ok := got[n+"/e7"]; !ok {
			t.Errorf("no %s metric: %v", n, got)
		}
	}
	s := g.Late.Arrivals.Snapshot()
	if s.Count != 5 || s.Min != 1_000_000-20 || s.Max != 1_000_900-160 {
		t.Errorf("arrivals count %d min %d max %d", s.Count, s.Min, s.Max)
	}
}
