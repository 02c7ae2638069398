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
	next    []int64  // if set, the position's next offset of each partition of topic "a" after the step
}

// TestAlignmentReachesKgo checks that the alignment group's decisions and
// idleness reach franz-go: single partitions are paused and resumed with
// PauseFetchPartitions and ResumeFetchPartitions, a paused partition's
// records wait (not skipped) until it resumes, and a paused partition
// never goes idle while a quiet one does, and a fetched record past the
// bound is held in the reader, out of its position, until the bound moves
// past it. No record of any case is late.
func TestAlignmentReachesKgo(t *testing.T) {
	const s = 1000 // ms
	for _, tc := range []struct {
		name    string
		buffer  int
		readers int // sources in the group, each on its own topic
		noIdle  bool
		steps   []alignStep
		drift1  bool // a maximum drift of 1 ms instead of 10 s: the configuration refuses 0
	}{
		{"the partition past min + drift pauses alone, and resumes", 0, 1, false, []alignStep{
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 100 * s}, {partition: 2, val: "a2", ts: 5 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{1}},
			{produce: []rec{{partition: 0, val: "b0", ts: 95 * s}, {partition: 2, val: "b2", ts: 96 * s}},
				read: []string{"b0", "b2"}, advance: time.Second, paused: nil},
		}, false},
		{"a paused partition's records wait for its resume, none skipped", 0, 1, false, []alignStep{
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 100 * s}, {partition: 2, val: "a2", ts: 1 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{1}},
			{produce: []rec{{partition: 1, val: "held1", ts: 101 * s}, {partition: 1, val: "held2", ts: 102 * s}},
				read: nil, advance: time.Second, paused: []int32{1}},
			{produce: []rec{{partition: 0, val: "b0", ts: 99 * s}, {partition: 2, val: "b2", ts: 99 * s}},
				// the bound follows the minimum at once: no waiting for the
				// next announcement
				read: []string{"b0", "b2", "held1", "held2"}, advance: time.Second, paused: nil},
		}, false},
		{"a paused partition is never idle; the quiet one goes idle and releases it (FLINK-35886, FLINK-32496)", 0, 1, false, []alignStep{
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 100 * s}, {partition: 2, val: "a2", ts: 100 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{1, 2}},
			// 40 s of quiet: partition 0 goes idle, the paused ones do not;
			// the minimum is then theirs, and they resume.
			{advance: 40 * time.Second, paused: nil, idle: []int32{0}},
		}, false},
		{"buffer 3: paused only once its sample of two intervals ago is past the bound (FLINK-37399)", 3, 1, false, []alignStep{
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 5 * s}, {partition: 2, val: "a2", ts: 1 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: nil},
			{produce: []rec{{partition: 1, val: "b1", ts: 100 * s}},
				read: []string{"b1"}, advance: time.Second, paused: nil},
			{advance: time.Second, paused: nil},
			{advance: time.Second, paused: []int32{1}},
		}, false},
		{"a group across two sources: the other source's slow partition pauses this one", 0, 2, false, []alignStep{
			// reader 0 reads topic a, reader 1 topic b (see below): all
			// produced records go to topic a; b's partitions stay at -inf
			// until its idle timeout, then a's run free.
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 1 * s}, {partition: 2, val: "a2", ts: 1 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{0, 1, 2}},
			{advance: 40 * time.Second, paused: nil},
		}, false},
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
		}, false},
		{"records fetched past the bound are held until the bound moves, and the position excludes them", 0, 1, false, []alignStep{
			// Partition 1's three records come in one fetch; only the first
			// is delivered (every partition is at -inf, so each may deliver
			// one), the others are past min + drift = 11 s and wait in the
			// reader, which keeps the partition paused and its next offset
			// at 1.
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 5 * s},
				{partition: 1, val: "h1", ts: 30 * s}, {partition: 1, val: "h2", ts: 40 * s}, {partition: 2, val: "a2", ts: 1 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{1}, output: 1 * s, next: []int64{1, 1, 1}},
			// Still held across announcements: nothing moved the bound.
			{advance: time.Second, paused: []int32{1}, next: []int64{1, 1, 1}},
			// Partitions 0 and 2 move to 25 s: partition 1 (5 s) now holds
			// the minimum and delivers h1 (30 s); h2 (40 s) is past the new
			// bound of 35 s and still waits, partition 1 paused.
			{produce: []rec{{partition: 0, val: "b0", ts: 25 * s}, {partition: 2, val: "b2", ts: 26 * s}},
				read: []string{"b0", "b2", "h1"}, advance: time.Second, paused: []int32{1}, output: 25 * s, next: []int64{2, 2, 2}},
			// At 35 s the minimum is partition 1's again: h2 leaves, and
			// the partition, at 40 s, is under the bound of 45 s and
			// fetches again.
			{produce: []rec{{partition: 0, val: "c0", ts: 35 * s}, {partition: 2, val: "c2", ts: 35 * s}},
				read: []string{"c0", "c2", "h2"}, advance: time.Second, paused: nil, output: 35 * s, next: []int64{3, 3, 3}},
		}, false},
		{"drift 1 ms, about 0: only partitions at the minimum move, one record at a time; none is stuck", 0, 1, false, []alignStep{
			// Every partition starts at -inf and delivers its first record;
			// then partition 0 holds the minimum (1 s) and has no more, so
			// partition 1's h1 (3 s) waits, paused, and partition 2, at
			// 2 s, is paused by the group.
			{produce: []rec{{partition: 0, val: "a0", ts: 1 * s}, {partition: 1, val: "a1", ts: 2 * s},
				{partition: 1, val: "h1", ts: 3 * s}, {partition: 2, val: "a2", ts: 2 * s}},
				read: []string{"a0", "a1", "a2"}, advance: time.Second, paused: []int32{1, 2}, output: 1 * s, next: []int64{1, 1, 1}},
			// Partition 0 reaches 2 s: partition 1 is at the minimum, and a
			// partition at the minimum always delivers its next record,
			// though it is past the bound: h1 leaves, and partition 1, now
			// at 3 s, is paused by the group; partition 2 resumes.
			{produce: []rec{{partition: 0, val: "b0", ts: 2 * s}},
				read: []string{"b0", "h1"}, advance: time.Second, paused: []int32{1}, output: 2 * s, next: []int64{2, 2, 1}},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3, "a", "b")
			clock := newFakeClock()
			groups := NewGroups()
			var readers []*Reader
			for i, topic := range []string{"a", "b"}[:tc.readers] {
				drift := int64(10 * s)
				if tc.drift1 {
					drift = 1
				}
				cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{topic},
					AlignmentGroup: "g", MaxDriftMillis: drift, UpdateIntervalMillis: 1 * s, SampleBuffer: &tc.buffer,
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
				if st.next != nil {
					pos := readers[0].Position().Next["a"]
					var next []int64
					for p := range int32(len(pos)) {
						next = append(next, pos[p])
					}
					if fmt.Sprint(next) != fmt.Sprint(st.next) {
						t.Errorf("step %d: position %v, want %v", i, next, st.next)
					}
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

// TestHeldRecordsRestore checks that a reader restored from the position
// of a reader holding records reads them again: held records are not in
// the position, so a checkpoint taken while they wait loses none.
func TestHeldRecordsRestore(t *testing.T) {
	const s = 1000 // ms
	c := newCluster(t, 3, "a")
	clock := newFakeClock()
	produce(t, c, "a", rec{partition: 0, val: "a0", ts: 1 * s}, rec{partition: 1, val: "a1", ts: 5 * s},
		rec{partition: 1, val: "h1", ts: 30 * s}, rec{partition: 1, val: "h2", ts: 40 * s}, rec{partition: 2, val: "a2", ts: 1 * s})
	cfg := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{"a"},
		AlignmentGroup: "g", MaxDriftMillis: 10 * s, UpdateIntervalMillis: 1 * s}
	r, err := Open(context.Background(), &cfg, ReaderOptions{Name: "src", Clock: clock, Groups: NewGroups(),
		PollWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got := values(readAll(t, r, 3, 300))
	got2 := values(readAll(t, r, 1, 5)) // nothing more: h1 and h2 are held
	r.Close()
	for v := range got2 {
		got[v] = true
	}
	if want := "[a0 a1 a2]"; fmt.Sprint(sortedKeys(got)) != want {
		t.Fatalf("read %v, want %s", sortedKeys(got), want)
	}
	pos := r.Position()
	if next := pos.Next["a"][1]; next != 1 {
		t.Fatalf("partition 1's next offset %d, want 1: past the held records", next)
	}
	cfg2 := kafkaio.ReadConfig{BootstrapServers: c.Addrs, Topics: []string{"a"}}
	r2, err := Open(context.Background(), &cfg2, ReaderOptions{Name: "restored", Clock: clock, Resume: &pos,
		PollWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if got, want := fmt.Sprint(sortedKeys(values(readAll(t, r2, 2, 300)))), "[h1 h2]"; got != want {
		t.Errorf("restored reader read %v, want %s", got, want)
	}
}
