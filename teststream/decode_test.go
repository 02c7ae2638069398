package teststream

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/test/integration/primitives"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector/connectortest"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/translate"
)

func sinkInt64(int64) {}

// int64Stream is a TestStream of int64 with every kind of event.
func int64Stream(s beam.Scope) {
	c := teststream.NewConfig()
	c.AddElements(100, int64(1), int64(300))
	c.AdvanceWatermark(110)
	c.AdvanceProcessingTime(int64(mtime.FromDuration(10 * time.Second)))
	c.AddElements(90, int64(2))
	c.AdvanceProcessingTimeToInfinity()
	beam.ParDo0(s, sinkInt64, teststream.Create(s, c))
}

// describe prints a TestStream's events, one per line.
func describe(events []executor.TestStreamEvent) string {
	var b strings.Builder
	for _, e := range events {
		switch e.Kind {
		case executor.TestStreamElements:
			b.WriteString("elements")
			for _, el := range e.Elements {
				fmt.Fprintf(&b, " %x@%d", el.Value, el.Timestamp)
			}
		case executor.TestStreamWatermark:
			fmt.Fprintf(&b, "watermark %d", e.Watermark)
		case executor.TestStreamProcessingTime:
			fmt.Fprintf(&b, "processing +%d inf=%v", e.AdvanceMillis, e.ToInfinity)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestTestStreamDecoding checks a TestStream becomes one source stage whose
// elements are in the wire encoding of its output: as the Go SDK writes
// them for coders weir measures (and for its custom coders, which it
// length-prefixes itself), length-prefixed by weir for coders it cannot
// measure (rows).
func TestTestStreamDecoding(t *testing.T) {
	maxTS := int64(mtime.MaxTimestamp)
	tests := []struct {
		name  string
		build func(beam.Scope)
		want  string
	}{
		{"strings", primitives.TestStreamStrings, fmt.Sprintf("elements 0161@100 0162@100 0163@100\nwatermark %d\n", maxTS)},
		{"bytes", primitives.TestStreamByteSliceSequence, fmt.Sprintf("elements 035b5c5d@1 035e5f60@1 03616263@1\nwatermark %d\n", maxTS)},
		{"int (custom coder)", primitives.TestStreamSimple, fmt.Sprintf("elements 0154@100\nwatermark %d\n", maxTS)},
		{"no watermark event", primitives.TestStreamSimple_InfinityDefault, "elements 0154@100\n"},
		{"row", primitives.TestStreamTwoUserTypeSequences,
			"elements 06020001610162@100 06020001620163@100 06020001630161@100\nwatermark 110\n" +
				"elements 06020001620161@120 06020001630162@120 06020001610163@120\nwatermark 130\n"},
		{"every event", int64Stream, fmt.Sprintf("elements 01@100 ac02@100\nwatermark 110\nprocessing +10000 inf=false\nelements 02@90\nprocessing +%d inf=true\n", maxTS)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := connectortest.Build(t, connectortest.Pipeline(t, tt.build), Connector{})
			if err != nil {
				t.Fatal(err)
			}
			natives := connectortest.Natives(plan)
			if len(natives) != 1 {
				t.Fatalf("%d TestStream stages, want 1", len(natives))
			}
			ts := natives[0]
			st, ok := ts.Native.(*stage)
			if !ok || len(ts.Inputs) != 0 || len(ts.Outputs) != 1 || ts.URN != URN {
				t.Fatalf("TestStream stage %+v, want one with events, no inputs and one output", ts)
			}
			if p := st.Placement(); p.Parallelism != 1 || !p.Serial {
				t.Errorf("placement %+v, want one subtask in a serial job", p)
			}
			if got := describe(st.events); got != tt.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
			}
			out := plan.PColls[ts.Outputs[0]]
			for _, e := range st.events {
				for _, el := range e.Elements {
					if n, err := out.Codec.Value(el.Value); err != nil || n != len(el.Value) {
						t.Errorf("element %x: wire value measure = %d, %v; want %d", el.Value, n, err, len(el.Value))
					}
				}
			}
		})
	}
}

// editTestStream changes the payload of the pipeline's one TestStream.
func editTestStream(t *testing.T, pp *pipepb.Pipeline, edit func(*pipepb.TestStreamPayload, *pipepb.Components)) {
	t.Helper()
	for _, tr := range pp.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() != URN {
			continue
		}
		var pl pipepb.TestStreamPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pl); err != nil {
			t.Fatal(err)
		}
		edit(&pl, pp.GetComponents())
		b, err := proto.Marshal(&pl)
		if err != nil {
			t.Fatal(err)
		}
		tr.Spec.Payload = b
		return
	}
	t.Fatal("no TestStream in the pipeline")
}

func TestTestStreamRefused(t *testing.T) {
	firstElem := func(pl *pipepb.TestStreamPayload) *pipepb.TestStreamPayload_TimestampedElement {
		return pl.Events[0].GetElementEvent().Elements[0]
	}
	tests := []struct {
		name string
		edit func(*pipepb.TestStreamPayload, *pipepb.Components)
		want string
	}{
		{"endpoint", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) {
			pl.Endpoint = &pipepb.ApiServiceDescriptor{Url: "localhost:1234"}
		}, "endpoint localhost:1234"},
		{"undefined coder", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) { pl.CoderId = "nope" }, `coder "nope" is not defined`},
		{"no coder", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) { pl.CoderId = "" }, "names no coder"},
		{"other coder", func(pl *pipepb.TestStreamPayload, c *pipepb.Components) {
			c.Coders["other"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:string_utf8:v1"}}
			pl.CoderId = "other"
			// weir converts the events to the output's coder in the SDK
			// (recode.go), so they must decode with the payload's.
		}, `does not decode with coder "other"`},
		{"trailing bytes", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) {
			firstElem(pl).EncodedElement = []byte{1, 2}
		}, "event 0: element 0: coder"},
		{"truncated", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) {
			firstElem(pl).EncodedElement = []byte{0x80}
		}, "does not decode"},
		{"timestamp", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) {
			firstElem(pl).Timestamp = int64(mtime.MinTimestamp) - 1
		}, "out of range"},
		{"watermark back", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) {
			pl.Events[1].GetWatermarkEvent().NewWatermark = 100
			pl.Events = append(pl.Events, &pipepb.TestStreamPayload_Event{Event: &pipepb.TestStreamPayload_Event_WatermarkEvent{
				WatermarkEvent: &pipepb.TestStreamPayload_Event_AdvanceWatermark{NewWatermark: 99}}})
		}, "watermark moves back from 100 to 99"},
		{"processing time back", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) {
			pl.Events[2].GetProcessingTimeEvent().AdvanceDuration = -5
		}, "event 2: processing time moves back"},
		{"unknown tag", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) {
			pl.Events[0].GetElementEvent().Tag = "side"
		}, `tag "side"`},
		{"empty event", func(pl *pipepb.TestStreamPayload, _ *pipepb.Components) {
			pl.Events = append(pl.Events, &pipepb.TestStreamPayload_Event{})
		}, "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp := connectortest.Pipeline(t, int64Stream)
			editTestStream(t, pp, tt.edit)
			_, err := connectortest.Build(t, pp, Connector{})
			if err == nil {
				t.Fatal("Build accepted the pipeline")
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || !strings.Contains(msg, `transform "External" (`+URN+")") {
				t.Errorf("Build = %v\nwant an error naming the transform and %s, saying %q", err, URN, tt.want)
			}
		})
	}
}

// TestTestStreamRecodes: a TestStream whose output is in another coder
// than its payload's (Python types its output by hints, often pickled)
// writes its events in the payload's coder to an SDK-side Flatten that
// writes the output in its own.
func TestTestStreamRecodes(t *testing.T) {
	pp := connectortest.Pipeline(t, int64Stream)
	comps := pp.GetComponents()
	comps.Coders["pickled"] = &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "example:coder:pickled:v1"}}
	var out string
	for _, tr := range comps.GetTransforms() {
		if tr.GetSpec().GetUrn() == URN {
			out = connectortest.Only(tr.GetOutputs())
		}
	}
	comps.Pcollections[out].CoderId = "pickled"
	plan, err := connectortest.Build(t, pp, Connector{})
	if err != nil {
		t.Fatal(err)
	}
	var events string
	for _, s := range connectortest.Natives(plan) {
		events = s.Outputs[0]
	}
	if c := plan.Components.GetPcollections()[events].GetCoderId(); events == "" || c == "pickled" {
		t.Fatalf("TestStream writes %q in coder %q, want its payload's", events, c)
	}
	found := false
	for _, s := range plan.Stages {
		for _, id := range s.Transforms {
			tr := plan.Components.GetTransforms()[id]
			if tr.GetSpec().GetUrn() == translate.URNFlatten && s.Kind == translate.KindSDK && connectortest.Only(tr.GetInputs()) == events && connectortest.Only(tr.GetOutputs()) == out {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no SDK-side Flatten from the TestStream's events %s to its output %s", events, out)
	}
}

// TestWireValueKV checks a KV's unknown value coder is length-prefixed
// behind its key.
func TestWireValueKV(t *testing.T) {
	b := wireCoders{map[string]*pipepb.Coder{
		"str": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:string_utf8:v1"}},
		"row": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:row:v1"}},
		"kv":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"str", "row"}},
		"rk":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"row", "str"}},
	}}
	got, err := b.value("kv", []byte{1, 'k', 9, 9, 9}, false)
	if want := []byte{1, 'k', 3, 9, 9, 9}; err != nil || !bytes.Equal(got, want) {
		t.Errorf("wireValue(kv) = %x, %v; want %x", got, err, want)
	}
	if _, err := b.value("rk", []byte{9, 1, 'v'}, false); err == nil || !strings.Contains(err.Error(), "key coder") {
		t.Errorf("wireValue with an unknown key coder = %v, want an error about the key", err)
	}
}

// TestWireValueOuter: Java and Python write TestStream elements in the
// outer context, where a string or bytes has no length and a KV's value
// is outer; weir's wire form is nested.
func TestWireValueOuter(t *testing.T) {
	b := wireCoders{map[string]*pipepb.Coder{
		"str":    {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:string_utf8:v1"}},
		"bytes":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}},
		"varint": {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:varint:v1"}},
		"kv":     {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"str", "str"}},
		"kvint":  {Spec: &pipepb.FunctionSpec{Urn: "beam:coder:kv:v1"}, ComponentCoderIds: []string{"str", "varint"}},
	}}
	for _, tt := range []struct {
		coder    string
		in, want []byte
	}{
		{"str", []byte("a"), []byte{1, 'a'}},
		{"str", []byte{1, 'a'}, []byte{2, 1, 'a'}}, // nested "a" to Go; outer "\x01a" here
		{"str", nil, []byte{0}},
		{"bytes", []byte{0x80, 0xff}, []byte{2, 0x80, 0xff}},
		{"varint", []byte{0xac, 0x02}, []byte{0xac, 0x02}},
		{"kv", []byte{1, 'k', 'v', 'w'}, []byte{1, 'k', 2, 'v', 'w'}},
		{"kvint", []byte{1, 'k', 7}, []byte{1, 'k', 7}},
	} {
		got, err := b.value(tt.coder, tt.in, true)
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("wireValue(%s, %x, outer) = %x, %v; want %x", tt.coder, tt.in, got, err, tt.want)
		}
	}
	if _, err := b.value("kvint", []byte{1, 'k', 7, 7}, true); err == nil {
		t.Error("a varint value with a byte left over was accepted")
	}
}

func TestEncodesOuter(t *testing.T) {
	env := func(caps ...string) *pipepb.Environment { return &pipepb.Environment{Capabilities: caps} }
	for _, tt := range []struct {
		name string
		envs map[string]*pipepb.Environment
		want bool
	}{
		{"java", map[string]*pipepb.Environment{"e": env("beam:coder:bytes:v1", "beam:version:sdk_base:apache/beam_java17_sdk:2.73.0")}, true},
		{"python", map[string]*pipepb.Environment{"e": env("beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0")}, true},
		{"go", map[string]*pipepb.Environment{"e": env("beam:version:sdk_base:apache/beam_go_sdk:2.77.0")}, false},
		{"go with a Java expansion", map[string]*pipepb.Environment{
			"go":   env("beam:version:sdk_base:apache/beam_go_sdk:2.77.0"),
			"java": env("beam:version:sdk_base:apache/beam_java17_sdk:2.73.0"),
		}, false},
		{"unnamed", map[string]*pipepb.Environment{"e": env("beam:coder:bytes:v1")}, false},
		{"none", nil, false},
	} {
		if got := encodesOuter(&pipepb.Components{Environments: tt.envs}); got != tt.want {
			t.Errorf("%s: encodesOuter = %v, want %v", tt.name, got, tt.want)
		}
	}
}
