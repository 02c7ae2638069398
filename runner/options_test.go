package runner

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/translate"
)

func TestTranslateOptionsLifting(t *testing.T) {
	for _, tc := range []struct {
		opts     map[string]any
		noLift   bool
		err      string
		noUnlift bool
	}{
		{nil, false, "", false},
		{map[string]any{"beam:option:weir_combine_lifting:v1": "false"}, true, "", false},
		{map[string]any{"beam:option:go_options:v1": map[string]any{"options": map[string]any{"weir_combine_lifting": "true"}}}, false, "", false},
		{map[string]any{"weir_combine_lifting": "sometimes"}, false, `weir_combine_lifting="sometimes"`, false},
		{map[string]any{"beam:option:weir_adaptive_unlift:v1": "false"}, false, "", true},
		{map[string]any{"weir_adaptive_unlift": "maybe"}, false, `weir_adaptive_unlift="maybe"`, false},
	} {
		st, err := structpb.NewStruct(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		o, err := translateOptions(&Job{Options: st}, translate.Options{})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one naming %s", tc.opts, err, tc.err)
			}
			continue
		}
		if err != nil || o.NoLift != tc.noLift || o.NoUnlift != tc.noUnlift {
			t.Errorf("%v: NoLift %v NoUnlift %v err %v, want %v and %v", tc.opts, o.NoLift, o.NoUnlift, err, tc.noLift, tc.noUnlift)
		}
	}
}

// A job's option wins over the server's default.
func TestTranslateOptionsServerDefault(t *testing.T) {
	o, _ := translateOptions(&Job{}, translate.Options{NoLift: true, FixedPrecombine: true})
	st, _ := structpb.NewStruct(map[string]any{"beam:option:weir_combine_lifting:v1": "true",
		"beam:option:weir_adaptive_precombine:v1": "true"})
	o2, _ := translateOptions(&Job{Options: st}, translate.Options{NoLift: true, FixedPrecombine: true})
	if !o.NoLift || o2.NoLift {
		t.Errorf("server default off: NoLift %v; job asks for lifting: NoLift %v", o.NoLift, o2.NoLift)
	}
	if !o.FixedPrecombine || o2.FixedPrecombine {
		t.Errorf("server default fixed: FixedPrecombine %v; job asks for adaptive: %v", o.FixedPrecombine, o2.FixedPrecombine)
	}
	st, _ = structpb.NewStruct(map[string]any{"weir_adaptive_precombine": "maybe"})
	if _, err := translateOptions(&Job{Options: st}, translate.Options{}); err == nil || !strings.Contains(err.Error(), "weir_adaptive_precombine") {
		t.Errorf("bad --weir_adaptive_precombine: error %v, want one naming the option", err)
	}
}

func TestSpreadWarningOption(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want time.Duration
		err  bool
	}{{"", DefaultSpreadWarning, false}, {"90s", 90 * time.Second, false}, {"0", 0, false}, {"soon", 0, true}, {"-1m", 0, true}} {
		opts := map[string]any{}
		if tc.v != "" {
			opts["beam:option:weir_input_spread_warning:v1"] = tc.v
		}
		st, _ := structpb.NewStruct(opts)
		d, err := spreadWarning(&Job{Options: st})
		if (err != nil) != tc.err || d != tc.want {
			t.Errorf("%q: %v, %v; want %v (error %v)", tc.v, d, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), SpreadWarningOption) {
			t.Errorf("%q: error %v does not name the option", tc.v, err)
		}
	}
}
