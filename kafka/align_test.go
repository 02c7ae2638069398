package kafka

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/weir-runner/weir/kafkaio"
)

// alignStep is one step of TestAlignmentReachesKgo: produce, poll until
// the records in read have arrived, move the fake clock by advance, poll
// again so the group samples and announces (and the records in then
// arrive), then compare what kgo is told to pause.
type alignStep struct {
	produce []rec
	read    []string // values that must arrive in this step, and no others
	advance time.Duration
	then    []string // values that must arrive after the advance, and no others
	paused  []int32  // partitions of topic "a" paused in kgo after the step
	idle    []int32  // partitions idle after the step
	output  int64    // if not 0, the source's output watermark after the step, in ms
}

// TestAlignmentReachesKgo checks that the alignment group's decisions and
// idleness reach franz-go: single partitions are paused and resumed with
// PauseFetchPartitions and ResumeFetchPartitions, a paused partition's
// records wait (not skipped) until it resumes, and a paused partition
// never goes idle while a quiet one does. No record of any case is late.
func TestAlignmentReachesKgo(t *testing.T) {
	const s = 1000 // ms
	for _, tc := range []struct {
		name    string
		buffer  int
		readers int // sources in the group, each on its own topic
		noIdle  bool
		steps   []alignStep
	}{
		{"the partition past min + drift pauses alone, and resumes", 0, 1, false, []alignStep{
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 100 * s}, {partition: 2, val: "a2", ts: 5 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{1}},
			{produce: []rec{{partition: 0, val: "b0", ts: 95 * s}, {partition: 2, val: "b2", ts: 96 * s}},
				read: []string{"b0", "b2"}, advance: time.Second, paused: nil},
		}},
		{"a paused partition's records wait for its resume, none skipped", 0, 1, false, []alignStep{
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 100 * s}, {partition: 2, val: "a2", ts: 1 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{1}},
			{produce: []rec{{partition: 1, val: "held1", ts: 101 * s}, {partition: 1, val: "held2", ts: 102 * s}},
				read: nil, advance: time.Second, paused: []int32{1}},
			{produce: []rec{{partition: 0, val: "b0", ts: 99 * s}, {partition: 2, val: "b2", ts: 99 * s}},
				// the bound follows the minimum at once: no waiting for the
				// next announcement
				read: []string{"b0", "b2", "held1", "held2"}, advance: time.Second, paused: nil},
		}},
		{"a paused partition is never idle; the quiet one goes idle and releases it (FLINK-35886, FLINK-32496)", 0, 1, false, []alignStep{
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 100 * s}, {partition: 2, val: "a2", ts: 100 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{1, 2}},
			// 40 s of quiet: partition 0 goes idle, the paused ones do not;
			// the minimum is then theirs, and they resume.
			{advance: 40 * time.Second, paused: nil, idle: []int32{0}},
		}},
		{"buffer 3: paused only once its sample of two intervals ago is past the bound (FLINK-37399)", 3, 1, false, []alignStep{
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 5 * s}, {partition: 2, val: "a2", ts: 1 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: nil},
			{produce: []rec{{partition: 1, val: "b1", ts: 100 * s}},
				read: []string{"b1"}, advance: time.Second, paused: nil},
			{advance: time.Second, paused: nil},
			{advance: time.Second, paused: []int32{1}},
		}},
		{"a group across two sources: the other source's slow partition pauses this one", 0, 2, false, []alignStep{
			// reader 0 reads topic a, reader 1 topic b (see below): all
			// produced records go to topic a; b's partitions stay at -inf
			// until its idle timeout, then a's run free.
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 1 * s}, {partition: 2, val: "a2", ts: 1 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{0, 1, 2}},
			{advance: 40 * time.Second, paused: nil},
		}},
		{"no idle timeout: a partition at the end of its log stops holding the bound, the watermark still waits for it", 0, 1, true, []alignStep{
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 1 * s}, {partition: 2, val: "a2", ts: 50 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{2}, output: 1 * s},
			// 2 s without records is not yet dry: partition 2 waits, its
			// record with it.
			{produce: []rec{{partition: 1, val: "b1", ts: 2 * s}, {partition: 2, val: "held", ts: 60 * s}},
				read: []string{"b1"}, advance: time.Second, paused: []int32{2}, output: 1 * s},
			// Partitions 0 and 1 have read their whole logs and been quiet
			// for three intervals: dry. Pausing partition 2 cannot speed
			// them up, so it resumes and reads; the watermark stays at
			// partition 0's.
			{advance: 5 * time.Second, then: []string{"held"}, paused: nil, output: 1 * s},
			// A record brings partition 0 back into the bound, and it is
			// not late, since the watermark waited: partition 2 pauses again.
			{produce: []rec{{partition: 0, val: "c0", ts: 3 * s}},
				read: []string{"c0"}, advance: time.Second, paused: []int32{2}, output: 2 * s},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3, "a", "b")
			clock := newFakeClock()
			groups := NewGroups()
			var readers []*Reader
			for i, topic := range []string{"a", "b"}[:tc.readers] {
				cfg := kafkaio.ReadConfig{BootstrapServers: c.ListenAddrs(), Topics: []string{topic},
					AlignmentGroup: "g", MaxDriftMillis: 10 * s, UpdateIntervalMillis: 1 * s, SampleBuffer: &tc.buffer,
					IdleTimeoutMillis: 30 * s}
				if tc.noIdle {
					cfg.IdleTimeoutMillis = 0
				}
				r, err := Open(context.Background(), &cfg, ReaderOptions{Name: fmt.Sprint("src", i), Clock: clock,
					Groups: groups, PollWait: 10 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				readers = append(readers, r)
			}
			// The reader checked, readers[0], polls last, so it applies an
			// announcement made in the same round.
			pollAll := func(got map[string]bool) {
				for i := len(readers) - 1; i >= 0; i-- {
					r := readers[i]
					recs, err := r.Poll(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					for _, x := range recs {
						got[string(x.Value)] = true
					}
				}
			}
			readUntil := func(i int, want []string) {
				got := map[string]bool{}
				for range 300 {
					if len(got) >= len(want) {
						break
					}
					pollAll(got)
				}
				for range 3 { // records that should not come would come now
					pollAll(got)
				}
				sort.Strings(want)
				if fmt.Sprint(sortedKeys(got)) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
					t.Errorf("step %d: read %v, want %v", i, sortedKeys(got), want)
				}
			}
			for i, st := range tc.steps {
				produce(t, c, "a", st.produce...)
				readUntil(i, st.read)
				clock.Advance(st.advance)
				readUntil(i, st.then)
				paused := readers[0].PausedPartitions()["a"]
				sort.Slice(paused, func(i, j int) bool { return paused[i] < paused[j] })
				if fmt.Sprint(paused) != fmt.Sprint(st.paused) && !(len(paused) == 0 && len(st.paused) == 0) {
					t.Errorf("step %d: kgo pauses %v, want %v; group %+v", i, paused, st.paused, groups.Announcements()["g"])
				}
				var idle []int32
				for _, p := range readers[0].Stats().Partitions {
					if p.Idle {
						idle = append(idle, p.Partition)
					}
				}
				if st.idle != nil && fmt.Sprint(idle) != fmt.Sprint(st.idle) {
					t.Errorf("step %d: idle partitions %v, want %v", i, idle, st.idle)
				}
				if out := readers[0].Stats().Output; st.output != 0 && int64(out) != st.output {
					t.Errorf("step %d: output watermark %v, want %v", i, int64(out), st.output)
				}
			}
			for _, r := range readers {
				if late := r.Stats().Late; late != 0 {
					t.Errorf("%s: %d late records", r.name, late)
				}
			}
		})
	}
}
