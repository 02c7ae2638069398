package executor

import (
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/wire"
)

// subtaskStats counts what one subtask does, for the job's metrics and its
// web page. The subtask's goroutines write it and any goroutine reads it,
// so every field is atomic; the counts are cumulative from the subtask's
// start, and readers take rates and ratios over their own intervals.
//
// The cost is kept off the per-element path where it can be: elements and
// bytes are added once per batch, and the clock is read only around a
// wait (for input, or for room downstream), not around work. Busy time is
// what is left of the wall time, as in Flink's busyTimeMsPerSecond.
type subtaskStats struct {
	elemsIn, bytesIn   atomic.Int64
	elemsOut, bytesOut atomic.Int64
	// idle is the time spent waiting for input; backpressured the time
	// spent waiting for room in a consumer's queue.
	idle, backpressured atomic.Int64 // nanoseconds
	bundles             atomic.Int64
	bundleTime          atomic.Int64 // nanoseconds
	bundleRetries       atomic.Int64
	inWM, outWM         atomic.Int64 // mtime.Time
	// outIdle: the subtask told its consumers it is idle (Output.Status).
	outIdle atomic.Bool
	// lateIn counts elements that came behind the input watermark on a
	// channel back from idleness (gate).
	lateIn         atomic.Int64
	started, ended atomic.Int64 // Unix nanoseconds; 0 until then
}

func newSubtaskStats() *subtaskStats {
	s := &subtaskStats{}
	s.inWM.Store(int64(mtime.MinTimestamp))
	s.outWM.Store(int64(mtime.MinTimestamp))
	return s
}

// in counts a batch the subtask's operator takes.
func (s *subtaskStats) in(elems [][]byte) {
	if s != nil {
		count(elems, &s.elemsIn, &s.bytesIn)
	}
}

// out counts a batch the subtask emits.
func (s *subtaskStats) out(elems [][]byte) {
	if s != nil {
		count(elems, &s.elemsOut, &s.bytesOut)
	}
}

func count(elems [][]byte, n, bytes *atomic.Int64) {
	b := 0
	for _, e := range elems {
		b += len(e)
	}
	n.Add(int64(len(elems)))
	bytes.Add(int64(b))
}

// late counts the elements of a batch whose timestamp is behind wm: the
// batch came on a channel behind the input watermark (back from idleness),
// so some of it may be late. Only such batches are looked at.
func (s *subtaskStats) late(elems [][]byte, wm mtime.Time) {
	n := 0
	for _, e := range elems {
		if len(e) >= 8 && wire.DecodeTime(e) < wm {
			n++
		}
	}
	if n > 0 {
		s.lateIn.Add(int64(n))
	}
}

// waited adds a wait that began at since to idle or backpressured time.
func waited(c *atomic.Int64, since time.Time) {
	c.Add(int64(time.Since(since)))
}

// bundle counts an SDK bundle that ran for d.
func (s *subtaskStats) bundle(d time.Duration) {
	if s == nil {
		return
	}
	s.bundles.Add(1)
	s.bundleTime.Add(int64(d))
}

// retry counts a bundle retried because its worker was lost.
func (s *subtaskStats) retry() {
	if s == nil {
		return
	}
	s.bundleRetries.Add(1)
}

// SubtaskSample is what Graph.Sample reads of one subtask.
type SubtaskSample struct {
	Node, Subtask int
	// Cumulative counts since the subtask started.
	ElementsIn, ElementsOut int64
	BytesIn, BytesOut       int64
	// Idle is the time spent waiting for input, Backpressured waiting
	// for room downstream; Running is the time since the subtask started,
	// up to its end if it ended.
	Idle, Backpressured, Running time.Duration
	Bundles                      int64
	BundleTime                   time.Duration
	BundleRetries                int64
	// InputWatermark is the least watermark over the subtask's inputs
	// (a source has none: the start of time); OutputWatermark the last
	// the subtask sent.
	InputWatermark, OutputWatermark mtime.Time
	// QueueDepth is the number of messages in the subtask's input queue,
	// of QueueCapacity.
	QueueDepth, QueueCapacity int
	// InputSpread is, for a subtask fed by several stages, the distance
	// between its producers' watermarks when it last looked (zero where
	// the job's spread warning is off).
	InputSpread time.Duration
	// OutputIdle says the subtask last told its consumers it is idle:
	// its output watermark holds none of them back.
	OutputIdle bool
	// LateInput counts the elements that came behind the subtask's input
	// watermark on a channel back from idleness: late here, whatever their
	// producer thought.
	LateInput int64
	Ended     bool
}

// Sample appends a sample of every subtask of the running graph to buf, in
// node then subtask order; nothing before Run has wired the graph.
func (g *Graph) Sample(buf []SubtaskSample) []SubtaskSample {
	g.mu.Lock()
	subs := g.subs
	g.mu.Unlock()
	now := time.Now().UnixNano()
	for _, row := range subs {
		for _, st := range row {
			s := st.stats
			if s == nil {
				continue
			}
			sm := SubtaskSample{Node: st.node, Subtask: st.index,
				ElementsIn: s.elemsIn.Load(), ElementsOut: s.elemsOut.Load(),
				BytesIn: s.bytesIn.Load(), BytesOut: s.bytesOut.Load(),
				Idle: time.Duration(s.idle.Load()), Backpressured: time.Duration(s.backpressured.Load()),
				Bundles: s.bundles.Load(), BundleTime: time.Duration(s.bundleTime.Load()),
				BundleRetries:  s.bundleRetries.Load(),
				InputWatermark: mtime.Time(s.inWM.Load()), OutputWatermark: mtime.Time(s.outWM.Load()),
				QueueDepth: len(st.in.data.slots), QueueCapacity: cap(st.in.data.slots),
				InputSpread: time.Duration(st.spread.last(st.index)) * time.Millisecond,
				OutputIdle:  s.outIdle.Load(), LateInput: s.lateIn.Load()}
			if start := s.started.Load(); start != 0 {
				end := s.ended.Load()
				sm.Ended = end != 0
				if end == 0 {
					end = now
				}
				sm.Running = time.Duration(end - start)
			}
			buf = append(buf, sm)
		}
	}
	return buf
}
