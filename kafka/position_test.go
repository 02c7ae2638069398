package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

// TestReadResume opens a reader at a restored position: listed partitions
// start at their recorded next offset, an unlisted one (added since) at
// the configured start, max_records counts on from the recorded reads,
// and the position afterwards is where reading stopped.
func TestReadResume(t *testing.T) { kafkatest.Each(t, testReadResume) }

func testReadResume(t *testing.T, c *kafkatest.Broker) {
	in := c.Topic(t, "in", 3)
	var recs []rec
	for i := range 9 {
		recs = append(recs, rec{partition: int32(i % 3), val: fmt.Sprint("v", i), ts: int64(1000 * (i + 1))})
	}
	produce(t, c, in, recs...)
	// Partition 0 holds v0 v3 v6, 1 holds v1 v4 v7, 2 holds v2 v5 v8.
	pos := &Position{Next: map[string]map[int32]int64{in: {0: 2, 1: 1}}, Read: 3}
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{in}, MaxRecords: 3 + 6}
	r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "resume", PollWait: 20 * time.Millisecond, Resume: pos})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := values(readAll(t, r, 6, 100))
	want := []string{"v2", "v4", "v5", "v6", "v7", "v8"}
	if fmt.Sprint(sortedKeys(got)) != fmt.Sprint(want) {
		t.Errorf("read %v, want %v", sortedKeys(got), want)
	}
	if !r.Done() {
		t.Error("max_records did not count the restored reads")
	}
	after := r.Position()
	if fmt.Sprint(after.Next) != fmt.Sprintf("map[%s:map[0:3 1:3 2:3]]", in) || after.Read != 9 {
		t.Errorf("position after %+v", after)
	}
}

// TestReadResumeWatermarks restores readers from their positions, as a
// restored job does, and checks each partition's watermark and idleness
// come back with the offsets: a partition that was idle stays out of the
// minimum (so the watermark moves with the next record of the others, not
// an idle timeout later), and the output never goes below what was
// emitted, though a partition back from idleness behind it would pull the
// restored minimum below.
func TestReadResumeWatermarks(t *testing.T) {
	c := newCluster(t, 2, "in")
	clock := newFakeClock()
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{"in"}, IdleTimeoutMillis: 1000}
	open := func(pos *Position) *Reader {
		t.Helper()
		if pos != nil { // through JSON, as a checkpoint keeps it
			b, err := json.Marshal(pos)
			if err != nil {
				t.Fatal(err)
			}
			pos = &Position{}
			if err := json.Unmarshal(b, pos); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "marks", PollWait: 20 * time.Millisecond, Clock: clock, Resume: pos})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return r
	}
	read := func(r *Reader, n int, want mtime.Time) {
		t.Helper()
		if got := readAll(t, r, n, 100); len(got) != n {
			t.Fatalf("read %d records, want %d", len(got), n)
		}
		r.Watermark() // the source emits after each poll
		if got := r.Stats().Output; got != want {
			t.Errorf("watermark %d after reading, want %d", got, want)
		}
	}
	expect := func(r *Reader, out mtime.Time, p0, p1 mtime.Time, p1Idle bool) {
		t.Helper()
		st := r.Stats()
		if st.Output != out {
			t.Errorf("restored output watermark %d, want %d", st.Output, out)
		}
		for _, p := range st.Partitions {
			want, idle := p0, false
			if p.Partition == 1 {
				want, idle = p1, p1Idle
			}
			if p.Watermark != want || p.Idle != idle {
				t.Errorf("partition %d restored at %d (idle %v), want %d (idle %v)", p.Partition, p.Watermark, p.Idle, want, idle)
			}
		}
	}

	produce(t, c, "in", rec{partition: 0, val: "a", ts: 1000}, rec{partition: 1, val: "b", ts: 2000})
	r1 := open(nil)
	read(r1, 2, 1000)
	clock.Advance(1500 * time.Millisecond) // partition 1 goes idle at the next poll
	produce(t, c, "in", rec{partition: 0, val: "c", ts: 6000})
	read(r1, 1, 6000)
	pos := r1.Position()

	r2 := open(&pos)
	expect(r2, 6000, 6000, 2000, true)
	produce(t, c, "in", rec{partition: 0, val: "d", ts: 7000})
	read(r2, 1, 7000) // partition 1 is still out of the minimum
	produce(t, c, "in", rec{partition: 1, val: "e", ts: 2500})
	read(r2, 1, 7000) // back from idleness, behind: the output stays
	pos = r2.Position()

	r3 := open(&pos)
	expect(r3, 7000, 7000, 2500, false)
	produce(t, c, "in", rec{partition: 1, val: "f", ts: 8000}, rec{partition: 0, val: "g", ts: 9000})
	read(r3, 2, 8000)
}
