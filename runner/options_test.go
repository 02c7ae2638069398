package runner

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestTranslateOptionsLifting(t *testing.T) {
	for _, tc := range []struct {
		opts   map[string]any
		noLift bool
		err    string
	}{
		{nil, false, ""},
		{map[string]any{"beam:option:weir_combine_lifting:v1": "false"}, true, ""},
		{map[string]any{"beam:option:go_options:v1": map[string]any{"options": map[string]any{"weir_combine_lifting": "true"}}}, false, ""},
		{map[string]any{"weir_combine_lifting": "sometimes"}, false, `weir_combine_lifting="sometimes"`},
	} {
		st, err := structpb.NewStruct(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		o, err := translateOptions(&Job{Options: st}, false)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one naming %s", tc.opts, err, tc.err)
			}
			continue
		}
		if err != nil || o.NoLift != tc.noLift {
			t.Errorf("%v: NoLift %v err %v, want %v", tc.opts, o.NoLift, err, tc.noLift)
		}
	}
}

// A job's option wins over the server's default.
func TestTranslateOptionsServerDefault(t *testing.T) {
	o, _ := translateOptions(&Job{}, true)
	st, _ := structpb.NewStruct(map[string]any{"beam:option:weir_combine_lifting:v1": "true"})
	o2, _ := translateOptions(&Job{Options: st}, true)
	if !o.NoLift || o2.NoLift {
		t.Errorf("server default off: NoLift %v; job asks for lifting: NoLift %v", o.NoLift, o2.NoLift)
	}
}
