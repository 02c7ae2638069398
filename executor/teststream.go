package executor

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/wire"
)

// TestStreamEventKind says what a TestStream event does.
type TestStreamEventKind uint8

// TestStream event kinds.
const (
	TestStreamElements       TestStreamEventKind = iota // add elements
	TestStreamWatermark                                 // advance the watermark
	TestStreamProcessingTime                            // advance processing time
)

// TestStreamEvent is one event of a TestStream.
type TestStreamEvent struct {
	Kind TestStreamEventKind
	// Elements (TestStreamElements) go out in the global window at their
	// timestamps.
	Elements []TestStreamElement
	// Watermark (TestStreamWatermark) is the new watermark; one that does
	// not move it forward is ignored.
	Watermark mtime.Time
	// AdvanceMillis (TestStreamProcessingTime) moves processing time
	// forward; ToInfinity moves it to MaxTimestamp.
	AdvanceMillis int64
	ToInfinity    bool
}

// TestStreamElement is an element value, encoded with the output's wire
// element coder, and its event time.
type TestStreamElement struct {
	Timestamp mtime.Time
	Value     []byte
}

// TestStream replays a TestStream's events in order, on output 0, with
// parallelism 1. It owns the job's synthetic processing time: it starts at
// Start and each processing-time event moves it forward, in-band
// (Output.ProcessingTime), sent once before the first event and then at
// every advance. After the last event the watermark goes to the end of time
// and the source ends.
type TestStream struct {
	Events []TestStreamEvent
	// Start is the synthetic processing time before the first event; the
	// runner passes the job's start on the wall clock, as event-time
	// pipelines would see it.
	Start mtime.Time
	// Batch bounds the elements per emitted batch; default 256.
	Batch int
	// Before, if set, is called before event i is replayed, with a
	// function that takes the barriers waiting (Injector.Poll). Crash
	// tests hold the replay at an event there until checkpoints complete,
	// then fail it; an error ends the replay.
	Before func(ctx context.Context, i int, poll func() error) error
}

// Run implements Source.
func (s *TestStream) Run(ctx context.Context, out *Output, inj *Injector) error {
	batch := s.Batch
	if batch <= 0 {
		batch = 256
	}
	r := &replay{out: out, inj: inj, wm: mtime.MinTimestamp, pt: min(max(s.Start, mtime.MinTimestamp), mtime.MaxTimestamp),
		events: len(s.Events)}
	if err := r.restore(inj.Restored()); err != nil {
		return err
	}
	inj.OnSnapshot(r.position)
	if err := r.poll(); err != nil {
		return err
	}
	if r.wm > mtime.MinTimestamp {
		// Restored: the consumers start at their recorded watermarks, but
		// a consumer that had none yet learns it here.
		if err := out.Watermark(ctx, r.wm); err != nil {
			return err
		}
	}
	if err := out.ProcessingTime(ctx, r.pt); err != nil {
		return err
	}
	for i := r.next; i < len(s.Events); i++ {
		ev := s.Events[i]
		if i == r.next && r.sent > 0 && ev.Kind == TestStreamElements {
			// Elements of this event before the snapshot went out already.
			ev.Elements = ev.Elements[min(r.sent, len(ev.Elements)):]
		}
		r.cur = i
		if s.Before != nil {
			if err := s.Before(ctx, i, r.poll); err != nil {
				return err
			}
		}
		if err := r.event(ctx, ev, batch); err != nil {
			return err
		}
		r.next, r.sent = i+1, 0
	}
	r.cur = len(s.Events)
	return r.watermark(ctx, mtime.MaxTimestamp)
}

// replay is a TestStream's progress through its events.
type replay struct {
	out *Output
	inj *Injector
	wm  mtime.Time // watermark sent so far
	pt  mtime.Time // synthetic processing time sent so far
	// cur is the event being replayed; next is the first event not
	// wholly sent, of which sent elements are.
	cur, next, sent, events int
}

// TestStreamPosition is where a TestStream's replay stood at a snapshot:
// a restored one resumes at element Sent of event Next, with the
// watermark and processing time it had sent.
type TestStreamPosition struct {
	Next           int        `json:"next_event"`
	Sent           int        `json:"sent"`
	Watermark      mtime.Time `json:"watermark"`
	ProcessingTime mtime.Time `json:"processing_time"`
}

// restore resumes the replay at a recorded position; b nil is a fresh
// start.
func (r *replay) restore(b []byte) error {
	if b == nil {
		return nil
	}
	var pos TestStreamPosition
	if err := json.Unmarshal(b, &pos); err != nil {
		return fmt.Errorf("test stream: restore %q: %w", b, err)
	}
	if pos.Next < 0 || pos.Next > r.events || pos.Sent < 0 {
		return fmt.Errorf("test stream: restore: position %+v outside its %d events", pos, r.events)
	}
	r.next, r.sent, r.cur = pos.Next, pos.Sent, pos.Next
	// The recorded processing time, not this run's start: the replay is
	// deterministic, and a later start would fire processing-time triggers.
	r.wm, r.pt = pos.Watermark, pos.ProcessingTime
	return nil
}

func (r *replay) position() ([]byte, error) {
	return json.Marshal(TestStreamPosition{Next: r.next, Sent: r.sent, Watermark: r.wm, ProcessingTime: r.pt})
}

// done marks the current event sent, before the poll that may snapshot.
func (r *replay) done() { r.next, r.sent = min(r.cur+1, r.events), 0 }

func (r *replay) poll() error {
	_, err := r.inj.Poll()
	return err
}

func (r *replay) event(ctx context.Context, ev TestStreamEvent, batch int) error {
	switch ev.Kind {
	case TestStreamElements:
		for len(ev.Elements) > 0 {
			n := min(batch, len(ev.Elements))
			if err := r.out.Emit(ctx, 0, encodeTestStreamElements(ev.Elements[:n])); err != nil {
				return err
			}
			ev.Elements = ev.Elements[n:]
			if r.sent += n; len(ev.Elements) == 0 {
				r.done()
			}
			if err := r.poll(); err != nil {
				return err
			}
		}
		return nil
	case TestStreamWatermark:
		return r.watermark(ctx, min(ev.Watermark, mtime.MaxTimestamp))
	case TestStreamProcessingTime:
		return r.processingTime(ctx, ev)
	}
	return nil
}

func (r *replay) watermark(ctx context.Context, wm mtime.Time) error {
	if wm <= r.wm {
		return nil
	}
	r.wm = wm
	if err := r.out.Watermark(ctx, wm); err != nil {
		return err
	}
	r.done()
	return r.poll()
}

func (r *replay) processingTime(ctx context.Context, ev TestStreamEvent) error {
	pt := advanceProcessingTime(r.pt, ev)
	if pt <= r.pt {
		return nil
	}
	r.pt = pt
	if err := r.out.ProcessingTime(ctx, pt); err != nil {
		return err
	}
	r.done()
	return r.poll()
}

// advanceProcessingTime moves pt by a processing-time event, stopping at
// MaxTimestamp.
func advanceProcessingTime(pt mtime.Time, ev TestStreamEvent) mtime.Time {
	if ev.ToInfinity || ev.AdvanceMillis >= int64(mtime.MaxTimestamp-pt) {
		return mtime.MaxTimestamp
	}
	return pt + mtime.Time(max(ev.AdvanceMillis, 0))
}

// encodeTestStreamElements makes windowed values of elements: the global
// window, their timestamps, and the no-firing pane sources produce.
func encodeTestStreamElements(els []TestStreamElement) [][]byte {
	size := 0
	for _, el := range els {
		size += 8 + 4 + 1 + len(el.Value)
	}
	buf := make([]byte, 0, size)
	out := make([][]byte, len(els))
	pane := []byte{wire.PaneNoFiring}
	for i, el := range els {
		start := len(buf)
		buf = wire.AppendWindowedValue(buf, el.Timestamp, nil, pane, el.Value)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}
