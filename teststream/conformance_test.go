package teststream

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector/conformance"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/wire"
)

// streamHarness replays a TestStream of 300 string elements in three
// events, with watermark and processing-time events between, one element
// a batch so that barriers fall between elements.
type streamHarness struct {
	vals  []string
	codec *wire.Codec
}

func newStreamHarness(t *testing.T) *streamHarness {
	coders := map[string]*pipepb.Coder{
		"s":  {Spec: &pipepb.FunctionSpec{Urn: wire.URNStringUTF8}},
		"gw": {Spec: &pipepb.FunctionSpec{Urn: wire.URNGlobalWindow}},
	}
	win, err := wire.MeasureFor(coders, "gw")
	if err != nil {
		t.Fatal(err)
	}
	val, err := wire.MeasureFor(coders, "s")
	if err != nil {
		t.Fatal(err)
	}
	h := &streamHarness{codec: wire.NewCodec(win, val)}
	for i := range 300 {
		h.vals = append(h.vals, fmt.Sprintf("v%03d", i))
	}
	return h
}

func (h *streamHarness) New(testing.TB) executor.Source {
	var events []executor.TestStreamEvent
	for i := 0; i < len(h.vals); i += 100 {
		ev := executor.TestStreamEvent{Kind: executor.TestStreamElements}
		for j, v := range h.vals[i : i+100] {
			b := binary.AppendUvarint(nil, uint64(len(v)))
			ev.Elements = append(ev.Elements, executor.TestStreamElement{Timestamp: mtime.Time(i + j), Value: append(b, v...)})
		}
		events = append(events, ev,
			executor.TestStreamEvent{Kind: executor.TestStreamWatermark, Watermark: mtime.Time(i + 100)},
			executor.TestStreamEvent{Kind: executor.TestStreamProcessingTime, AdvanceMillis: 1000})
	}
	return &executor.TestStream{Events: events, Start: 0, Batch: 1}
}

func (h *streamHarness) Parts() [][]string { return [][]string{h.vals} }

// Feed does nothing: the events are in the payload.
func (h *streamHarness) Feed(testing.TB, int) {}

func (h *streamHarness) Value(e []byte) (string, error) {
	v, err := h.codec.ValueOf(e)
	if err != nil {
		return "", err
	}
	n, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < n {
		return "", wire.ErrShort
	}
	return string(v[k : k+int(n)]), nil
}

func TestConformance(t *testing.T) {
	conformance.RunSource(t, "teststream", func(t *testing.T) conformance.SourceHarness { return newStreamHarness(t) })
}
