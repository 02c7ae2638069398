package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/internal/kafkatest"
	"github.com/weir-runner/weir/kafkaio"
)

// TestStopLatest: a read with stop "latest" reads each partition to the
// end it had when the read opened, not what is produced after; it ends a
// partition as soon as it is read there, so the watermark no longer waits
// for it, and ends when the last one has; a restored read keeps the first
// run's stops.
func TestStopLatest(t *testing.T) { kafkatest.Each(t, testStopLatest) }

func testStopLatest(t *testing.T, c *kafkatest.Broker) {
	in := c.Topic(t, "stop", 3)
	// Partition 0: 1 record at 1 s; partition 1: 4 records, 10 s to 40 s;
	// partition 2: empty.
	produce(t, c, in, rec{partition: 0, val: "a0", ts: 1000},
		rec{partition: 1, val: "b0", ts: 10000}, rec{partition: 1, val: "b1", ts: 20000},
		rec{partition: 1, val: "b2", ts: 30000}, rec{partition: 1, val: "b3", ts: 40000})
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{in}, Stop: kafkaio.StopLatest}
	open := func(name string, resume *Position) *Reader {
		r, err := Open(context.Background(), &cfg, ReaderOptions{Name: name, PollWait: 20 * time.Millisecond, MaxPoll: 1, Resume: resume})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := open("first", nil)
	defer r.Close()
	// Records produced now are past the stops.
	produce(t, c, in, rec{partition: 0, val: "late-a", ts: 2000}, rec{partition: 2, val: "late-c", ts: 3000},
		rec{partition: 1, val: "late-b", ts: 50000})
	got := readAll(t, r, 2, 100)
	pos := r.Position()
	if len(got) != 2 || r.Done() {
		t.Fatalf("read %d records (done %v), want 2 and more to come", len(got), r.Done())
	}
	// Partition 0 has ended at its one record: the watermark is partition
	// 1's alone, not held at 1 s.
	if wm, _ := r.Watermark(); wm < mtime.Time(10000) {
		t.Errorf("watermark %v with partition 0 read to its stop; want partition 1's (>= 10s)", wm)
	}
	rest := readAll(t, r, 10, 100)
	if !r.Done() {
		t.Fatalf("read not done after %d records", len(got)+len(rest))
	}
	if all := append(got, rest...); fmt.Sprint(sortedKeys(values(all))) != "[a0 b0 b1 b2 b3]" {
		t.Errorf("read %v, want the records there at the start: [a0 b0 b1 b2 b3]", sortedKeys(values(all)))
	}
	if wm, _ := r.Watermark(); wm != mtime.MaxTimestamp {
		t.Errorf("watermark %v after the read ended, want +inf", wm)
	}

	// Restored from the position after two records, more produced since:
	// it reads to the first run's stops.
	produce(t, c, in, rec{partition: 1, val: "later-b", ts: 60000})
	r2 := open("restored", &pos)
	defer r2.Close()
	rest2 := readAll(t, r2, 10, 100)
	if !r2.Done() {
		t.Fatalf("restored read not done after %d records", len(rest2))
	}
	if all := append(got, rest2...); fmt.Sprint(sortedKeys(values(all))) != "[a0 b0 b1 b2 b3]" {
		t.Errorf("restored read gave %v with the first two, want [a0 b0 b1 b2 b3]", sortedKeys(values(all)))
	}
}

// TestStopLatestAligned: partitions of an aligned read whose logs end at
// different event times, with no idle timeout, end one by one and leave
// the group: the read finishes with processing time standing still. A
// partition read to its end without a stop would hold the others paused
// until it ran dry, three update intervals later, which never come on
// this clock.
func TestStopLatestAligned(t *testing.T) { kafkatest.Each(t, testStopLatestAligned) }

func testStopLatestAligned(t *testing.T, c *kafkatest.Broker) {
	in := c.Topic(t, "stopalign", 3)
	var recs []rec
	for p := range int32(3) {
		// Partition p: records a minute apart for 10+10p minutes.
		for m := range 10 + 10*int(p) {
			recs = append(recs, rec{partition: p, val: fmt.Sprintf("p%d-%d", p, m), ts: int64(m) * 60_000})
		}
	}
	produce(t, c, in, recs...)
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{in}, Stop: kafkaio.StopLatest,
		AlignmentGroup: c.Name(t, "g"), MaxDriftMillis: 30_000}
	r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "aligned", PollWait: 20 * time.Millisecond, MaxPoll: 5,
		Groups: NewGroups(), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := readAll(t, r, len(recs)+1, 2000)
	if !r.Done() || len(got) != len(recs) {
		t.Fatalf("read %d of %d records, done %v: the read waited on an ended partition", len(got), len(recs), r.Done())
	}
}
