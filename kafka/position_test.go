package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

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
