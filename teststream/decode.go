package teststream

import (
	"errors"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/wire"
)

// URN is the TestStream transform's.
const URN = "beam:transform:teststream:v1"

// Connector runs TestStreams.
type Connector struct{}

var (
	_ connector.Connector   = Connector{}
	_ connector.OutputCoder = Connector{}
)

// URN implements connector.Connector.
func (Connector) URN() string { return URN }

// OutputCoder implements connector.OutputCoder: the events are encoded
// with the payload's coder. Python encodes them with the coder given to
// TestStream and types the output by its hints, often pickled.
func (Connector) OutputCoder(t *connector.Transform) (string, bool) {
	var pl pipepb.TestStreamPayload
	if proto.Unmarshal(t.Payload(), &pl) != nil || t.Coder(pl.GetCoderId()) == nil {
		return "", false // Decode says what is wrong
	}
	return pl.GetCoderId(), true
}

// Decode implements connector.Connector. Its elements arrive encoded
// with the payload's coder as the SDK writes them; they are re-encoded
// for the wire coder, which length-prefixes what the runner cannot
// measure.
func (Connector) Decode(t *connector.Transform) (connector.Config, []error) {
	var pl pipepb.TestStreamPayload
	if err := proto.Unmarshal(t.Payload(), &pl); err != nil {
		return nil, []error{fmt.Errorf("TestStream payload does not decode: %w", err)}
	}
	if u := pl.GetEndpoint().GetUrl(); u != "" {
		return nil, []error{fmt.Errorf("TestStream reads its events from endpoint %s; weir only replays events in the payload", u)}
	}
	if err := t.Ports("a TestStream", 0, 1, 1); err != nil {
		return nil, []error{err}
	}
	var local string
	for l := range t.Proto.GetOutputs() {
		local = l
	}
	out := t.Proto.GetOutputs()[local]
	coder, err := testStreamCoder(t, pl.GetCoderId(), out)
	if err != nil {
		return nil, []error{err}
	}
	st := &stage{}
	var errs []error
	wm := mtime.MinTimestamp
	w := wireCoders{t.Components.GetCoders()}
	outer := encodesOuter(t.Components)
	for i, ev := range pl.GetEvents() {
		e, err := testStreamEvent(w, ev, coder, local, &wm, outer)
		if err != nil {
			errs = append(errs, fmt.Errorf("TestStream event %d: %w", i, err))
			continue
		}
		st.events = append(st.events, e)
	}
	if errs != nil {
		return nil, errs
	}
	return st, nil
}

// testStreamCoder checks the payload's coder against the output
// PCollection's and returns the coder its elements are decoded with: the
// output's. The Go SDK names its custom coder in the payload, while the
// output carries it length-prefixed, and writes elements length-prefixed.
func testStreamCoder(t *connector.Transform, payloadCoder, out string) (string, error) {
	pc, err := t.PColl(out)
	if err != nil {
		return "", fmt.Errorf("output %w", err)
	}
	if err := t.CheckGlobalWindow(out); err != nil {
		return "", err
	}
	if payloadCoder == "" {
		return "", errors.New("TestStream payload names no coder")
	}
	pcc := t.Coder(payloadCoder)
	if pcc == nil {
		return "", fmt.Errorf("TestStream coder %q is not defined", payloadCoder)
	}
	oc := t.Coder(pc.GetCoderId())
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

// testStreamEvent decodes one event. wm is the watermark so far; outer
// says elements are in the outer context (encodesOuter).
func testStreamEvent(w wireCoders, ev *pipepb.TestStreamPayload_Event, coder, local string, wm *mtime.Time, outer bool) (executor.TestStreamEvent, error) {
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
			return executor.TestStreamEvent{}, err
		}
		out := executor.TestStreamEvent{Kind: executor.TestStreamElements}
		for j, el := range ee.GetElements() {
			ts := mtime.Time(el.GetTimestamp())
			if ts < mtime.MinTimestamp || ts > mtime.MaxTimestamp {
				return executor.TestStreamEvent{}, fmt.Errorf("element %d: timestamp %d ms is out of range", j, el.GetTimestamp())
			}
			v, err := w.value(coder, el.GetEncodedElement(), outer)
			if err != nil {
				return executor.TestStreamEvent{}, fmt.Errorf("element %d: %w", j, err)
			}
			out.Elements = append(out.Elements, executor.TestStreamElement{Timestamp: ts, Value: v})
		}
		return out, nil
	case ev.GetWatermarkEvent() != nil:
		we := ev.GetWatermarkEvent()
		if err := tagOK(we.GetTag()); err != nil {
			return executor.TestStreamEvent{}, err
		}
		to := mtime.Time(min(we.GetNewWatermark(), int64(mtime.MaxTimestamp)))
		if to < *wm {
			return executor.TestStreamEvent{}, fmt.Errorf("watermark moves back from %d to %d ms", int64(*wm), we.GetNewWatermark())
		}
		*wm = to
		return executor.TestStreamEvent{Kind: executor.TestStreamWatermark, Watermark: to}, nil
	case ev.GetProcessingTimeEvent() != nil:
		d := ev.GetProcessingTimeEvent().GetAdvanceDuration()
		if d < 0 {
			return executor.TestStreamEvent{}, fmt.Errorf("processing time moves back by %d ms", -d)
		}
		// The Go SDK's AdvanceProcessingTimeToInfinity advances by
		// MaxTimestamp's milliseconds.
		return executor.TestStreamEvent{Kind: executor.TestStreamProcessingTime, AdvanceMillis: d, ToInfinity: d >= int64(mtime.MaxTimestamp)}, nil
	}
	return executor.TestStreamEvent{}, errors.New("event is empty")
}
