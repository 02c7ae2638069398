package translate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/wire"
)

// TestStream is a TestStream's events, checked at submission and ready to
// replay: element values are already in the output's wire encoding.
type TestStream struct {
	Events []TestStreamEvent
}

// TestStreamEventKind says what a TestStream event does.
type TestStreamEventKind int

// TestStream event kinds.
const (
	TestStreamElements       TestStreamEventKind = iota // add elements
	TestStreamWatermark                                 // advance the watermark
	TestStreamProcessingTime                            // advance processing time
)

// TestStreamEvent is one event of a TestStream.
type TestStreamEvent struct {
	Kind TestStreamEventKind
	// Elements (TestStreamElements) are encoded with the output
	// PCollection's wire element coder: the value part of a windowed value.
	Elements []TestStreamElement
	// Watermark (TestStreamWatermark) is the new watermark, at most
	// MaxTimestamp; it never goes back.
	Watermark mtime.Time
	// AdvanceMillis (TestStreamProcessingTime) is how far processing time
	// moves, in milliseconds, never negative. ToInfinity says it moves to
	// the end of time.
	AdvanceMillis int64
	ToInfinity    bool
}

// TestStreamElement is one element of a TestStream.
type TestStreamElement struct {
	Timestamp mtime.Time
	Value     []byte
}

// validateTestStream lists what weir cannot run about a TestStream.
func (b *builder) validateTestStream(id, where string) []error {
	_, errs := b.testStream(id)
	for i, err := range errs {
		errs[i] = fmt.Errorf("%s: %w", where, err)
	}
	return errs
}

// placeTestStream gives a TestStream stage its decoded events. Validation
// has passed, so decoding does not fail.
func (b *builder) placeTestStream(s *Stage, id string) {
	s.TestStream, _ = b.testStream(id)
}

// testStream decodes a TestStream transform's payload. Its elements arrive
// encoded with the payload's coder as the SDK writes them (nested
// context); they are re-encoded for the wire coder, which length-prefixes
// what the runner cannot measure.
func (b *builder) testStream(id string) (*TestStream, []error) {
	t := b.comps.Transforms[id]
	var pl pipepb.TestStreamPayload
	if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
		return nil, []error{fmt.Errorf("TestStream payload does not decode: %w", err)}
	}
	if u := pl.GetEndpoint().GetUrl(); u != "" {
		return nil, []error{fmt.Errorf("TestStream reads its events from endpoint %s; weir only replays events in the payload", u)}
	}
	if len(t.GetInputs()) != 0 || len(t.GetOutputs()) != 1 {
		return nil, []error{fmt.Errorf("a TestStream needs no inputs and one output, has %d and %d", len(t.GetInputs()), len(t.GetOutputs()))}
	}
	local := sortedKeys(t.GetOutputs())[0]
	out := t.GetOutputs()[local]
	coder, err := b.testStreamCoder(pl.GetCoderId(), out)
	if err != nil {
		return nil, []error{err}
	}
	ts := &TestStream{}
	var errs []error
	wm := mtime.MinTimestamp
	outer := encodesOuter(b.comps)
	for i, ev := range pl.GetEvents() {
		e, err := b.testStreamEvent(ev, coder, local, &wm, outer)
		if err != nil {
			errs = append(errs, fmt.Errorf("TestStream event %d: %w", i, err))
			continue
		}
		ts.Events = append(ts.Events, e)
	}
	return ts, errs
}

// testStreamCoder checks the payload's coder against the output
// PCollection's and returns the coder its elements are decoded with: the
// output's. The Go SDK names its custom coder in the payload, while the
// output carries it length-prefixed, and writes elements length-prefixed.
func (b *builder) testStreamCoder(payloadCoder, out string) (string, error) {
	pc, ok := b.comps.GetPcollections()[out]
	if !ok {
		return "", fmt.Errorf("output PCollection %q is not defined", out)
	}
	if ws := b.comps.GetWindowingStrategies()[pc.GetWindowingStrategyId()]; b.comps.Coders[ws.GetWindowCoderId()].GetSpec().GetUrn() != wire.URNGlobalWindow {
		return "", fmt.Errorf("output PCollection %q is not in the global window", out)
	}
	if payloadCoder == "" {
		return "", errors.New("TestStream payload names no coder")
	}
	pcc, ok := b.comps.Coders[payloadCoder]
	if !ok {
		return "", fmt.Errorf("TestStream coder %q is not defined", payloadCoder)
	}
	oc := b.comps.Coders[pc.GetCoderId()]
	switch {
	case pc.GetCoderId() == payloadCoder, proto.Equal(oc, pcc):
	case oc.GetSpec().GetUrn() == wire.URNLengthPrefix && len(oc.GetComponentCoderIds()) == 1 &&
		oc.GetComponentCoderIds()[0] == payloadCoder:
	default:
		return "", fmt.Errorf("TestStream coder %q (%s) is not the coder %q (%s) of its output PCollection",
			payloadCoder, pcc.GetSpec().GetUrn(), pc.GetCoderId(), oc.GetSpec().GetUrn())
	}
	return pc.GetCoderId(), nil
}

// sdkBase is the capability by which an environment names its SDK, as
// beam:version:sdk_base:apache/beam_java17_sdk:2.73.0.
const sdkBase = "beam:version:sdk_base:"

// encodesOuter says the pipeline's SDK writes TestStream elements in the
// outer context: Java (CoderUtils.encodeToByteArray) and Python
// (coder.encode) do, so a string or bytes element there has no length
// and a KV's value is outer too; the Go SDK writes them nested. Which SDK
// it is comes from its environments' sdk_base capability: trying both
// decodings would not do, since "\x01a" is "\x01a" outer and "a" nested.
// A pipeline with a Go environment, or none that names its SDK, is read
// nested.
func encodesOuter(comps *pipepb.Components) bool {
	outer := false
	for _, env := range comps.GetEnvironments() {
		for _, c := range env.GetCapabilities() {
			sdk, ok := strings.CutPrefix(c, sdkBase)
			switch {
			case !ok:
			case strings.Contains(sdk, "_go_"):
				return false
			case strings.Contains(sdk, "_java"), strings.Contains(sdk, "_python"):
				outer = true
			}
		}
	}
	return outer
}

// testStreamEvent decodes one event. wm is the watermark so far; outer
// says elements are in the outer context (encodesOuter).
func (b *builder) testStreamEvent(ev *pipepb.TestStreamPayload_Event, coder, local string, wm *mtime.Time, outer bool) (TestStreamEvent, error) {
	tagOK := func(tag string) error {
		if tag != "" && tag != local {
			return fmt.Errorf("tag %q names no output of the TestStream", tag)
		}
		return nil
	}
	switch {
	case ev.GetElementEvent() != nil:
		ee := ev.GetElementEvent()
		if err := tagOK(ee.GetTag()); err != nil {
			return TestStreamEvent{}, err
		}
		out := TestStreamEvent{Kind: TestStreamElements}
		for j, el := range ee.GetElements() {
			ts := mtime.Time(el.GetTimestamp())
			if ts < mtime.MinTimestamp || ts > mtime.MaxTimestamp {
				return TestStreamEvent{}, fmt.Errorf("element %d: timestamp %d ms is out of range", j, el.GetTimestamp())
			}
			v, err := b.wireValue(coder, el.GetEncodedElement(), outer)
			if err != nil {
				return TestStreamEvent{}, fmt.Errorf("element %d: %w", j, err)
			}
			out.Elements = append(out.Elements, TestStreamElement{Timestamp: ts, Value: v})
		}
		return out, nil
	case ev.GetWatermarkEvent() != nil:
		we := ev.GetWatermarkEvent()
		if err := tagOK(we.GetTag()); err != nil {
			return TestStreamEvent{}, err
		}
		to := mtime.Time(min(we.GetNewWatermark(), int64(mtime.MaxTimestamp)))
		if to < *wm {
			return TestStreamEvent{}, fmt.Errorf("watermark moves back from %d to %d ms", int64(*wm), we.GetNewWatermark())
		}
		*wm = to
		return TestStreamEvent{Kind: TestStreamWatermark, Watermark: to}, nil
	case ev.GetProcessingTimeEvent() != nil:
		d := ev.GetProcessingTimeEvent().GetAdvanceDuration()
		if d < 0 {
			return TestStreamEvent{}, fmt.Errorf("processing time moves back by %d ms", -d)
		}
		// The Go SDK's AdvanceProcessingTimeToInfinity advances by
		// MaxTimestamp's milliseconds.
		return TestStreamEvent{Kind: TestStreamProcessingTime, AdvanceMillis: d, ToInfinity: d >= int64(mtime.MaxTimestamp)}, nil
	}
	return TestStreamEvent{}, errors.New("event is empty")
}

// wireValue re-encodes an element encoded with pipeline coder id into the
// encoding of the runner's wire coder for id, lp(id). The element must be
// exactly one value: bytes left over or missing are an error, so that a
// payload written in another context than outer says is refused rather
// than misread. In the outer context, bytes and strings take all of e and
// a KV's value is outer; other coders weir measures read the same in both.
func (b *builder) wireValue(id string, e []byte, outer bool) ([]byte, error) {
	c := b.comps.Coders[id]
	urn := c.GetSpec().GetUrn()
	if outer && (urn == wire.URNBytes || urn == wire.URNStringUTF8) {
		return append(binary.AppendUvarint(make([]byte, 0, len(e)+binary.MaxVarintLen64), uint64(len(e))), e...), nil
	}
	lpID := b.lp(id)
	if outer && lpID == id && urn == wire.URNKV && len(c.GetComponentCoderIds()) == 2 {
		lpID = "" // the value may differ: the KV case below
	}
	switch {
	case lpID == id:
		m, err := wire.MeasureFor(b.comps.Coders, id)
		if err != nil {
			return nil, err
		}
		n, err := m(e)
		if err != nil {
			return nil, fmt.Errorf("does not decode with coder %q (%s): %w", id, urn, err)
		}
		if n != len(e) {
			return nil, fmt.Errorf("coder %q (%s) reads %d of its %d bytes", id, urn, n, len(e))
		}
		return e, nil
	case !wire.Known(urn):
		// lp wrapped the whole coder: the element is all of e.
		return append(binary.AppendUvarint(make([]byte, 0, len(e)+binary.MaxVarintLen64), uint64(len(e))), e...), nil
	case urn == wire.URNKV && len(c.GetComponentCoderIds()) == 2:
		k := c.GetComponentCoderIds()[0]
		if b.lp(k) != k {
			return nil, fmt.Errorf("key coder %q (%s) is one weir cannot measure", k, b.comps.Coders[k].GetSpec().GetUrn())
		}
		m, err := wire.MeasureFor(b.comps.Coders, k)
		if err != nil {
			return nil, err
		}
		n, err := m(e)
		if err != nil {
			return nil, fmt.Errorf("key does not decode with coder %q: %w", k, err)
		}
		v, err := b.wireValue(c.GetComponentCoderIds()[1], e[n:], outer)
		if err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		return append(e[:n:n], v...), nil
	default:
		return nil, fmt.Errorf("coder %q (%s) has a component weir cannot measure; only a KV's value may be unknown", id, urn)
	}
}
