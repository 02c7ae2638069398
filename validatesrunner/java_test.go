package validatesrunner

import (
	"fmt"
	"strings"
	"testing"
)

// TestJavaImportAndCheck reads Surefire's report, picks each failure's
// reason, and checks the run against a known list both ways, flaky entries
// excepted.
func TestJavaImportAndCheck(t *testing.T) {
	tests, err := ImportSurefire("testdata/surefire")
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) != 6 {
		t.Errorf("%d tests, want 6: a test reported twice is one, its failure kept", len(tests))
	}
	got := map[string]JavaTest{}
	for _, x := range tests {
		got[strings.TrimPrefix(x.Name, "org.example.ATest#")] = x
	}
	for name, want := range map[string]string{
		"passes":  "pass ",
		"fails":   "fail java.lang.AssertionError: Sum/output: Expected: <6> but: was <5>",
		"listed":  "fail expected:<1> but was:<2>",
		"ignored": "skip issue 1",
	} {
		if s := got[name].Status + " " + got[name].Reason; s != want {
			t.Errorf("%s: got %q, want %q", name, s, want)
		}
	}
	r := &JavaRun{Runner: "weir", Tests: tests}
	unexpected, fixed := CheckJava(r, map[string]string{
		"org.example.ATest#listed":      "a reason",
		"org.example.ATest#flakyPassed": "flaky: sometimes",
		"org.example.ATest#fixed":       "was broken",
	})
	if fmt.Sprint(unexpected) != "[org.example.ATest#fails: java.lang.AssertionError: Sum/output: Expected: <6> but: was <5>]" {
		t.Errorf("unexpected: %q", unexpected)
	}
	if fmt.Sprint(fixed) != "[org.example.ATest#fixed]" {
		t.Errorf("fixed: %q", fixed)
	}
	md := string(RenderJava([]*JavaRun{r, nil}, []string{"weir", "prism"}, map[string]map[string]string{
		"weir": {"org.example.ATest#listed": "a reason"}}))
	for _, want := range []string{"| weir | ", "| prism | not run yet", "| `org.example.ATest#listed` | **known** | — | weir: a reason |",
		"| `org.example.ATest#fails` | **FAIL** |"} {
		if !strings.Contains(md, want) {
			t.Errorf("rendered section lacks %q:\n%s", want, md)
		}
	}
}
