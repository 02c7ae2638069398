package translate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"google.golang.org/protobuf/proto"
)

// expiringFn is a stateful DoFn with a timer family it never sets, which a
// test declares its OnWindowExpiration family: the Go SDK cannot say so.
type expiringFn struct {
	Seen   state.Bag[int]
	Expire timers.EventTime
	Flush  timers.ProcessingTime
}

func (fn *expiringFn) ProcessElement(sp state.Provider, tp timers.Provider, _ int, v int, _ func(int)) {
}

func (fn *expiringFn) OnTimer(_ context.Context, _ beam.EventTime, _ state.Provider, _ timers.Provider, _ int, _ timers.Context, _ func(int)) {
}

func init() {
	register.DoFn5x0[state.Provider, timers.Provider, int, int, func(int)](&expiringFn{})
}

// expiringPipeline is Create → fixed windows with allowed lateness →
// expiringFn under "Expiring", marshalled, with the OnWindowExpiration
// family set to family and the requirement listed, as Java lists it.
func expiringPipeline(t *testing.T, family string) *pipepb.Pipeline {
	pp := marshal(t, scoped(func(s beam.Scope) {
		kv := beam.AddFixedKey(s, beam.Create(s, 1, 2, 3))
		in := beam.WindowInto(s, window.NewFixedWindows(time.Second), kv, beam.AllowedLateness(5*time.Second))
		beam.ParDo(s.Scope("Expiring"), &expiringFn{Seen: state.MakeBagState[int]("seen"),
			Expire: timers.InEventTime("expire"), Flush: timers.InProcessingTime("flush")}, in)
	})())
	found := false
	for _, tr := range pp.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() != URNParDo || !strings.HasPrefix(tr.GetUniqueName(), "Expiring/") {
			continue
		}
		var pd pipepb.ParDoPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pd); err != nil {
			t.Fatal(err)
		}
		pd.OnWindowExpirationTimerFamilySpec = family
		b, err := proto.Marshal(&pd)
		if err != nil {
			t.Fatal(err)
		}
		tr.Spec.Payload, found = b, true
	}
	if !found {
		t.Fatal("no ParDo under Expiring/")
	}
	pp.Requirements = append(pp.Requirements, URNReqStateful, URNReqWindowExpiry)
	return pp
}

// TestWindowExpirationPayload: the OnWindowExpiration family of a stateful
// ParDo reaches the plan (its stage's Stateful.WindowExpiration, with the
// allowed lateness its expiry is computed from) and stays in the payload
// the SDK reads from the descriptor; a family the payload does not declare,
// or one in processing time, is refused naming the transform.
func TestWindowExpirationPayload(t *testing.T) {
	for _, tc := range []struct {
		name, family string
		want         string // error; "" for a plan
	}{
		{name: "declared event-time family", family: "expire"},
		{name: "undeclared family", family: "nope", want: `the OnWindowExpiration timer family "nope" is not one of its timer families`},
		{name: "processing-time family", family: "flush", want: `the OnWindowExpiration timer family "flush" is in time domain PROCESSING_TIME, not event time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Build(expiringPipeline(t, tc.family), Options{})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Expiring/") {
					t.Fatalf("Build: %v; want a refusal naming Expiring/ and saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var st *Stateful
			var stage *Stage
			for _, s := range plan.Stages {
				if s.Stateful != nil {
					st, stage = s.Stateful, s
				}
			}
			if st == nil {
				t.Fatal("no stateful stage")
			}
			if st.WindowExpiration != tc.family || st.AllowedLateness != 5000 {
				t.Errorf("Stateful.WindowExpiration %q, AllowedLateness %d; want %q, 5000", st.WindowExpiration, st.AllowedLateness, tc.family)
			}
			found := false
			for _, f := range st.Timers {
				found = found || f.ID == tc.family && !f.ProcessingTime
			}
			if !found {
				t.Errorf("timer families %+v lack the event-time family %q: the SDK gets its timers through one", st.Timers, tc.family)
			}
			d, err := plan.Descriptor(stage, nil)
			if err != nil {
				t.Fatal(err)
			}
			var pd pipepb.ParDoPayload
			if err := proto.Unmarshal(d.GetTransforms()[st.TransformID].GetSpec().GetPayload(), &pd); err != nil {
				t.Fatal(err)
			}
			if pd.GetOnWindowExpirationTimerFamilySpec() != tc.family {
				t.Errorf("the descriptor's payload has OnWindowExpiration family %q, want %q", pd.GetOnWindowExpirationTimerFamilySpec(), tc.family)
			}
		})
	}
}
