package joboptions

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/protobuf/types/known/structpb"
)

func goOpts(kv map[string]any) map[string]any {
	return map[string]any{goOptions: map[string]any{"options": kv}}
}

// TestParse reads options in every form and JSON type an SDK sends.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts map[string]any
		want func(o *Options) // edits the defaults into the expected options
		err  string           // every error must name the option
	}{
		{"none", nil, func(*Options) {}, ""},
		// Python: beam:option:NAME:v1, booleans as JSON booleans, its
		// integers as strings (BEAM-5509), floats as numbers.
		{"python bool", map[string]any{"beam:option:weir_combine_lifting:v1": false},
			func(o *Options) { o.CombineLifting = false }, ""},
		{"python bool as text", map[string]any{"beam:option:weir_combine_lifting:v1": "false"},
			func(o *Options) { o.CombineLifting = false }, ""},
		{"python int as text", map[string]any{"beam:option:weir_max_bundle_elements:v1": "3"},
			func(o *Options) { o.MaxBundleElements = 3 }, ""},
		{"json number", map[string]any{"beam:option:weir_max_bundle_bytes:v1": 2048.0},
			func(o *Options) { o.MaxBundleBytes = 2048 }, ""},
		{"negative number", map[string]any{"weir_inline_group_bytes": -1.0},
			func(o *Options) { o.InlineGroupBytes = -1 }, ""},
		{"duration", map[string]any{"beam:option:weir_checkpoint_interval:v1": "10s"},
			func(o *Options) { o.CheckpointInterval = 10 * time.Second }, ""},
		// Go: every value a string under go_options.
		{"go options", goOpts(map[string]any{"weir_checkpoint_interval": "1m", "weir_checkpoint_mode": "aligned-timeout",
			"weir_checkpoint_aligned_timeout": "2s", "weir_checkpoint_keep": "5", "weir_restore": "false",
			"weir_dead_letter": "/tmp/late.jsonl"}),
			func(o *Options) {
				o.CheckpointInterval, o.CheckpointMode, o.CheckpointAlignedTimeout = time.Minute, ModeAlignedTimeout, 2*time.Second
				o.CheckpointKeep, o.Restore, o.DeadLetter = 5, false, "/tmp/late.jsonl"
			}, ""},
		{"bare name", map[string]any{"weir_adaptive_unlift": "false"}, func(o *Options) { o.AdaptiveUnlift = false }, ""},
		{"urn form first", map[string]any{"beam:option:weir_max_bundle_time:v1": "2s", "weir_max_bundle_time": "3s"},
			func(o *Options) { o.MaxBundleTime = 2 * time.Second }, ""},
		{"empty and null are unset", map[string]any{"weir_max_bundle_time": "", "beam:option:weir_dead_letter:v1": nil},
			func(*Options) {}, ""},
		{"savepoint", goOpts(map[string]any{"weir_checkpoint_interval": "1h", "weir_savepoint": "/sp",
			"weir_savepoint_rename": "a=b, c=d", "weir_savepoint_allow_dropped_state": "true"}),
			func(o *Options) {
				o.CheckpointInterval, o.Savepoint = time.Hour, "/sp"
				o.SavepointRename, o.SavepointAllowDroppedState = map[string]string{"a": "b", "c": "d"}, true
			}, ""},
		{"job name", map[string]any{"beam:option:job_name:v1": "clicks"}, func(o *Options) { o.JobName = "clicks" }, ""},
		{"go job name", goOpts(map[string]any{"job_name": "clicks"}), func(o *Options) { o.JobName = "clicks" }, ""},
		{"other options ignored", map[string]any{"beam:option:streaming:v1": true, "beam:option:sdk_worker_parallelism:v1": 1.0},
			func(*Options) {}, ""},

		{"bool not a bool", map[string]any{"beam:option:weir_combine_lifting:v1": "sometimes"}, nil,
			`option --weir_combine_lifting="sometimes": want true or false`},
		{"bool as number", map[string]any{"beam:option:weir_restore:v1": 1.0}, nil, `option --weir_restore=1: want true or false`},
		{"int as bool", map[string]any{"beam:option:weir_max_bundle_elements:v1": true}, nil,
			`option --weir_max_bundle_elements=true: want a whole number`},
		{"int fraction", map[string]any{"beam:option:weir_max_bundle_elements:v1": 2.5}, nil,
			`option --weir_max_bundle_elements=2.5: want a whole number`},
		{"int not positive", map[string]any{"weir_max_bundle_elements": "0"}, nil,
			`option --weir_max_bundle_elements="0": want a positive whole number`},
		{"int with unit", map[string]any{"weir_max_bundle_bytes": "1MiB"}, nil, `weir_max_bundle_bytes="1MiB"`},
		{"duration as number", map[string]any{"beam:option:weir_checkpoint_interval:v1": 10.0}, nil,
			`option --weir_checkpoint_interval=10: want a duration such as 10s`},
		{"duration negative", map[string]any{"weir_checkpoint_interval": "-1s"}, nil,
			`option --weir_checkpoint_interval="-1s": want a positive duration`},
		{"spread may be 0 not negative", map[string]any{"weir_input_spread_warning": "-1m"}, nil, `weir_input_spread_warning="-1m"`},
		{"path as bool", map[string]any{"beam:option:weir_dead_letter:v1": true}, nil, `option --weir_dead_letter=true: want a string`},
		{"list", map[string]any{"beam:option:weir_checkpoint_dir:v1": []any{"a"}}, nil, `option --weir_checkpoint_dir=["a"]: want a string`},
		{"enum", map[string]any{"weir_checkpoint_mode": "sideways"}, nil,
			`option --weir_checkpoint_mode="sideways": want one of aligned, unaligned, aligned-timeout`},
		{"mapping", goOpts(map[string]any{"weir_checkpoint_interval": "1s", "weir_savepoint": "/sp", "weir_savepoint_rename": "a"}), nil,
			`option --weir_savepoint_rename="a": want old=new pairs`},
		{"job name not a string", map[string]any{"beam:option:job_name:v1": 3.0}, nil, `option --job_name=3: want a string`},
		{"undeclared", map[string]any{"beam:option:weir_chekpoint_interval:v1": "1s"}, nil,
			`option --weir_chekpoint_interval: weir has no such job option`},
		{"undeclared go", goOpts(map[string]any{"weir_nope": "1"}), nil, `option --weir_nope: weir has no such`},
		{"savepoint without checkpoints", map[string]any{"weir_savepoint": "/sp"}, nil,
			`option --weir_savepoint="/sp": needs --weir_checkpoint_interval`},
		{"rename without savepoint", map[string]any{"weir_savepoint_rename": "a=b"}, nil, `option --weir_savepoint_rename: needs --weir_savepoint`},
		{"restarts without checkpoints", map[string]any{"weir_restart_attempts": "5"}, nil,
			`option --weir_restart_attempts: needs --weir_checkpoint_interval`},
		{"restart delay negative", map[string]any{"weir_checkpoint_interval": "1s", "weir_restart_delay": "-1s"}, nil,
			`option --weir_restart_delay="-1s": want a duration such as 10m, or 0`},
		{"stream mode", map[string]any{"weir_stream_bundle_output": "sometimes"}, nil,
			`option --weir_stream_bundle_output="sometimes": want one of auto, on, off`},
		{"aligned-timeout without its timeout", map[string]any{"weir_checkpoint_interval": "1s", "weir_checkpoint_mode": "aligned-timeout"},
			nil, `option --weir_checkpoint_mode="aligned-timeout": needs --weir_checkpoint_aligned_timeout`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := structpb.NewStruct(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(st)
			if tc.err != "" {
				var oe *Error
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &oe) {
					t.Fatalf("error %v, want an *Error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Defaults()
			tc.want(want)
			got.set, want.set = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// Every bad option of a job is reported at once.
func TestParseReportsEveryError(t *testing.T) {
	st, _ := structpb.NewStruct(map[string]any{"weir_restore": "maybe", "weir_max_bundle_time": "soon"})
	_, err := Parse(st)
	if err == nil || !strings.Contains(err.Error(), "weir_restore") || !strings.Contains(err.Error(), "weir_max_bundle_time") {
		t.Errorf("error %v, want both options named", err)
	}
}

// IsSet tells a default from a job's own value, so a server's default
// yields only to the job's.
func TestIsSet(t *testing.T) {
	st, _ := structpb.NewStruct(map[string]any{"beam:option:weir_combine_lifting:v1": true})
	o, err := Parse(st)
	if err != nil {
		t.Fatal(err)
	}
	if !o.IsSet(CombineLifting) || o.IsSet(AdaptivePrecombine) {
		t.Errorf("IsSet: lifting %v (set), precombine %v (not set)", o.IsSet(CombineLifting), o.IsSet(AdaptivePrecombine))
	}
}

// The declaration is whole: names are weir_*, unique, each fills its own
// field, defaults parse and pass their checks, enums have values, and the
// options that name files are paths.
func TestDeclaration(t *testing.T) {
	seen := map[string]bool{}
	fields := map[any]string{}
	o := &Options{}
	for _, d := range All() {
		if !strings.HasPrefix(d.Name, "weir_") || seen[d.Name] {
			t.Errorf("%s: not weir_* or declared twice", d.Name)
		}
		seen[d.Name] = true
		if d.Usage == "" || d.Group == "" || d.field == nil {
			t.Errorf("%s: no usage, group or field", d.Name)
		}
		p := d.field(o)
		if prev, dup := fields[p]; dup {
			t.Errorf("%s and %s fill the same field", d.Name, prev)
		}
		fields[p] = d.Name
		if d.Default != "" {
			v, err := d.parseText(d.Default)
			if err == nil && d.check != nil && d.check(v) != "" {
				err = errors.New(d.check(v))
			}
			if err != nil {
				t.Errorf("%s: default %q: %v", d.Name, d.Default, err)
			}
		}
		if (d.Kind == Enum) != (len(d.Values) > 0) {
			t.Errorf("%s: values %v for kind %v", d.Name, d.Values, d.Kind)
		}
		if wantPath := strings.HasSuffix(d.Name, "_dir") || d.Name == DeadLetter || d.Name == Savepoint; wantPath != d.IsPath() {
			t.Errorf("%s: IsPath %v", d.Name, d.IsPath())
		}
	}
	// Every field of Options but the job name and the set is an option's.
	if n := reflect.TypeOf(Options{}).NumField() - 2; len(fields) != n {
		t.Errorf("%d options fill %d of Options' %d fields", len(All()), len(fields), n)
	}
}

// The flags a Go pipeline gets check values as Parse does, take bool
// options bare, and hold the text the Go SDK sends.
func TestRegisterFlags(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	RegisterFlags(fs)
	if err := fs.Parse([]string{"--weir_checkpoint_interval=10s", "--weir_restore", "--weir_combine_lifting=false",
		"--weir_inline_group_bytes=-1"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{CheckpointInterval: "10s", Restore: "true", CombineLifting: "false",
		InlineGroupBytes: "-1", CheckpointDir: ""} {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
	for _, bad := range []string{"--weir_checkpoint_interval=often", "--weir_max_bundle_elements=0", "--weir_checkpoint_mode=sideways"} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		RegisterFlags(fs)
		if err := fs.Parse([]string{bad}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// Describe lists every option; booleans go as STRING so that Python's
// PortableRunner accepts --weir_combine_lifting=false (see Describe).
func TestDescribe(t *testing.T) {
	ds := Describe()
	if len(ds) != len(All()) {
		t.Fatalf("%d described, %d declared", len(ds), len(All()))
	}
	for i, d := range ds {
		decl := All()[i]
		want := jobpb.PipelineOptionType_STRING
		if decl.Kind == Int {
			want = jobpb.PipelineOptionType_INTEGER
		}
		if d.GetName() != decl.Name || d.GetType() != want || !strings.Contains(d.GetDescription(), decl.Usage) {
			t.Errorf("%s: described as %v", decl.Name, d)
		}
	}
}

// Paths lists every option of kind Path a job set, and only those.
func TestPaths(t *testing.T) {
	s, _ := structpb.NewStruct(map[string]any{
		"beam:option:weir_dead_letter:v1":         "/tmp/late.jsonl",
		"beam:option:weir_checkpoint_interval:v1": "10s",
		"beam:option:weir_savepoint:v1":           "/sp/1",
	})
	o, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	got := o.Paths()
	want := []PathValue{{DeadLetter, "/tmp/late.jsonl"}, {Savepoint, "/sp/1"}}
	if !slices.Equal(got, want) {
		t.Errorf("Paths() = %v, want %v", got, want)
	}
	for _, opt := range All() {
		if opt.IsPath() {
			if _, ok := opt.field(Defaults()).(*string); !ok {
				t.Errorf("option %s of kind Path is not a string field", opt.Name)
			}
		}
	}
}
