package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/kafka"
	"github.com/weir-runner/weir/kafkaio"
)

func kafkaOne(k, _ []byte) (string, int) { return string(k), 1 }

// kafkaJoined formats one key's impressions and clicks in a window as a
// record: the key, and "window start ms:impressions:clicks".
func kafkaJoined(w beam.Window, k string, imps, clicks func(*int) bool) ([]byte, []byte) {
	count := func(next func(*int) bool) int {
		n, v := 0, 0
		for next(&v) {
			n++
		}
		return n
	}
	return []byte(k), []byte(fmt.Sprintf("%d:%d:%d", w.(window.IntervalWindow).Start, count(imps), count(clicks)))
}

func init() {
	register.Function2x2(kafkaOne)
	register.Function4x2(kafkaJoined)
	register.Iter1[int]()
}

// joinRun runs the impressions-clicks join on weir: both topics read from
// start (with StartTimeMillis for kafkaio.StartTime), each bounded by its
// number of records, aligned in one group, joined per key in one-minute
// windows, written to topic out. It returns what out holds.
func joinRun(t *testing.T, c *kfake.Cluster, start string, from int64, imps, clicks int, out string) []string {
	t.Helper()
	read := func(s beam.Scope, topic string, n int) beam.PCollection {
		return beam.ParDo(s, kafkaOne, kafkaio.Read(s.Scope(topic), kafkaio.ReadConfig{
			BootstrapServers: c.ListenAddrs(), Topics: []string{topic}, Start: start, StartTimeMillis: from,
			MaxRecords: int64(n), AlignmentGroup: "join", MaxDriftMillis: 60_000, UpdateIntervalMillis: 50}))
	}
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	fixed := window.NewFixedWindows(time.Minute)
	joined := beam.CoGroupByKey(s, beam.WindowInto(s, fixed, read(s, "impressions", imps)),
		beam.WindowInto(s, fixed, read(s, "clicks", clicks)))
	kafkaio.Write(s, kafkaio.WriteConfig{BootstrapServers: c.ListenAddrs(), Topic: out}, beam.ParDo(s, kafkaJoined, joined))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := Execute(ctx, p); err != nil {
		t.Fatal(err)
	}
	return readTopic(ctx, t, c, out)
}

// readTopic returns every record of a topic as "key value", sorted: as
// many records as its end offsets say it holds.
func readTopic(ctx context.Context, t *testing.T, c *kfake.Cluster, topic string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total == 0 {
		return nil
	}
	r, err := kafka.Open(ctx, &kafkaio.ReadConfig{BootstrapServers: c.ListenAddrs(), Topics: []string{topic}, MaxRecords: total},
		kafka.ReaderOptions{Name: "check", PollWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for !r.Done() {
		recs, err := r.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range recs {
			out = append(out, fmt.Sprintf("%s %s", x.Key, x.Value))
		}
	}
	sort.Strings(out)
	return out
}

// TestKafkaEventTimeReplay runs a two-input join (impressions and clicks
// per key and minute) over both topics from the start, then replays it
// with both sides started at the same event time: the replay's output is
// exactly the first run's output for the windows from that time on.
// Replaying one side from an offset would not be (see
// shared/reference/join-replay-misalignment.txt); both from one event
// time is the pattern that is safe.
func TestKafkaEventTimeReplay(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "impressions", "clicks", "out1", "out2"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := int64(1_700_000_040_000) // on a minute
	from := base + 4*60_000          // the replay's start: the fifth minute
	var recs []*kgo.Record
	counts := map[string][2]int{} // topic → all, from the replay's start
	add := func(topic string, i int, ts int64) {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Key: []byte(fmt.Sprint("ad", i%4)),
			Value: []byte(fmt.Sprint(i)), Timestamp: time.UnixMilli(ts)})
		n := counts[topic]
		n[0]++
		if ts >= from {
			n[1]++
		}
		counts[topic] = n
	}
	// In event-time order per partition, as a topic's records are when
	// producers stamp them: then the first offset at or after a time is
	// where that time starts.
	for i := range 400 {
		add("impressions", i, base+int64(i)*1500) // ten minutes
		if i%3 == 0 {
			add("clicks", i, base+int64(i)*1500+700)
		}
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	all := joinRun(t, c, kafkaio.StartEarliest, 0, counts["impressions"][0], counts["clicks"][0], "out1")
	replay := joinRun(t, c, kafkaio.StartTime, from, counts["impressions"][1], counts["clicks"][1], "out2")

	var want []string
	for _, line := range all {
		var start int64
		if _, err := fmt.Sscanf(strings.Fields(line)[1], "%d:", &start); err != nil {
			t.Fatalf("output %q: %v", line, err)
		}
		if start >= from {
			want = append(want, line)
		}
	}
	if len(all) != 4*10 || len(want) != 4*6 {
		t.Fatalf("first run wrote %d rows, %d from the replay's start; want 40 and 24:\n%s", len(all), len(want), strings.Join(all, "\n"))
	}
	if strings.Join(replay, "\n") != strings.Join(want, "\n") {
		t.Errorf("replay from %d wrote\n%s\nwant\n%s", from, strings.Join(replay, "\n"), strings.Join(want, "\n"))
	}
}
