package filesource

import (
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/connector/connectortest"
	"github.com/weir-runner/weir/fileio"
)

func watchPipeline(t *testing.T, cfg fileio.WatchConfig) *pipepb.Pipeline {
	return connectortest.Pipeline(t, func(s beam.Scope) {
		fileio.Watch(s, cfg)
	})
}

// TestWatchStage: a Go pipeline's watch, in either mode, becomes a source
// stage of one subtask with its configuration; its folder is one a
// confined server checks.
func TestWatchStage(t *testing.T) {
	for _, mode := range []string{fileio.ModeFiles, fileio.ModeLines} {
		cfg := fileio.WatchConfig{Dir: "/in", Pattern: "*.csv", Mode: mode, MaxFiles: 3}
		plan, err := connectortest.Build(t, watchPipeline(t, cfg), Connector{})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		natives := connectortest.Natives(plan)
		if len(natives) != 1 {
			t.Fatalf("%s: %d native stages, want the watch", mode, len(natives))
		}
		st, ok := natives[0].Native.(*stage)
		if !ok || st.cfg.Dir != "/in" || st.cfg.Pattern != "*.csv" || st.cfg.Mode != mode || len(natives[0].Inputs) != 0 {
			t.Fatalf("%s: stage %+v, want the watch", mode, natives[0])
		}
		if p := st.Placement(); p.Parallelism != 1 {
			t.Errorf("%s: placement %+v, want one subtask", mode, p)
		}
		_, tr := connectortest.Find(watchPipeline(t, cfg), fileio.WatchURN)
		if paths, err := (Connector{}).Paths(&connector.Transform{Proto: tr}); err != nil || paths["dir"] != "/in" {
			t.Errorf("%s: paths %v, %v", mode, paths, err)
		}
	}
}

// TestWatchRefused: bad payloads and output coders fail at submission,
// naming the transform, its URN and every problem.
func TestWatchRefused(t *testing.T) {
	files := fileio.WatchConfig{Dir: "/in"}
	lines := fileio.WatchConfig{Dir: "/in", Mode: fileio.ModeLines}
	setPayload := func(payload string) func(p *pipepb.Pipeline) {
		return func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, fileio.WatchURN)
			tr.Spec.Payload = []byte(payload)
		}
	}
	setCoder := func(c *pipepb.Coder) func(p *pipepb.Pipeline) {
		return func(p *pipepb.Pipeline) {
			_, tr := connectortest.Find(p, fileio.WatchURN)
			p.Components.Coders["other"] = c
			p.Components.Pcollections[connectortest.Only(tr.Outputs)].CoderId = "other"
		}
	}
	for _, tc := range []struct {
		name   string
		cfg    fileio.WatchConfig
		change func(p *pipepb.Pipeline)
		want   []string
	}{
		{"every problem", files, setPayload(`{"pattern": "a/*", "mode": "words", "timestamp": "name", "max_files": -1}`),
			[]string{"fileio.Watch", fileio.WatchURN, "no dir", "pattern", `unknown mode "words"`, "needs name_layout", "max_files is -1"}},
		{"unknown field", files, setPayload(`{"dir": "/in", "poll_intervall_millis": 5}`), []string{"poll_intervall_millis"}},
		{"bad regexp", files, setPayload(`{"dir": "/in", "timestamp": "name", "name_layout": "2006", "name_regexp": "(a)(b)"}`),
			[]string{"has 2 groups"}},
		{"layout without time", files, setPayload(`{"dir": "/in", "timestamp": "name", "name_layout": "events.json"}`),
			[]string{"no element of a Go time layout"}},
		{"lines coder", lines, setCoder(&pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}}),
			[]string{"output", "not KV<bytes, bytes>"}},
		{"files coder", files, setCoder(&pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: "beam:coder:bytes:v1"}}),
			[]string{"output", "not a row of file metadata"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := watchPipeline(t, tc.cfg)
			tc.change(p)
			_, err := connectortest.Build(t, p, Connector{})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestWatchPanics: fileio.Watch refuses a bad configuration when the
// pipeline is built, as Beam's constructors do.
func TestWatchPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "split_by_folder needs recursive") {
			t.Errorf("recovered %v, want the configuration's problem", r)
		}
	}()
	watchPipeline(t, fileio.WatchConfig{Dir: "/in", SplitByFolder: true})
}
