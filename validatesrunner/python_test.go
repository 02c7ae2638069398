package validatesrunner

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReadPythonRun reads a pytest JUnit report: passes, known failures
// (xfail), skips with their reasons, and failures and errors as fails
// with the first line of their message.
func TestReadPythonRun(t *testing.T) {
	r, err := ReadPythonRun(filepath.Join("testdata", "python-junit.xml"), "weir")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"test_pardo":              {"pass", ""},
		"test_custom_window_type": {"xfail", "refused at submission: windows in a pickled coder"},
		"test_sdf_with_truncate":  {"skip", "Portable runners don't support drain yet."},
		"test_metrics":            {"fail", "AssertionError: 1 != 2"},
		"test_gbk":                {"fail", `RuntimeError: boom \| pipe`},
	}
	if len(r.Tests) != len(want) {
		t.Fatalf("%d tests, want %d", len(r.Tests), len(want))
	}
	for _, got := range r.Tests {
		if w := want[got.Name]; got.Status != w[0] || got.Reason != w[1] {
			t.Errorf("%s: %s %q, want %s %q", got.Name, got.Status, got.Reason, w[0], w[1])
		}
	}
	if pass, fail, skip := r.Counts(); pass != 1 || fail != 3 || skip != 1 {
		t.Errorf("counts %d/%d/%d, want 1/3/1", pass, fail, skip)
	}
	if r.Started != "2026-12-01 20:10" || r.Seconds != 12.5 {
		t.Errorf("started %q after %v s", r.Started, r.Seconds)
	}
	missing, err := ReadPythonRun(filepath.Join("testdata", "absent.xml"), "prism")
	if missing != nil || err != nil {
		t.Errorf("a missing report read as %v, %v; want never run", missing, err)
	}
	md := string(RenderPython([]*PythonRun{r, nil}, []string{"weir", "prism"}))
	for _, s := range []string{
		"| weir | 2026-12-01 20:10 | 13s | 1 | 3 | 1 | 1 | 5 |",
		"| prism | not run yet |",
		"| test_custom_window_type | **known** | — | weir: refused at submission: windows in a pickled coder |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("rendered section lacks %q:\n%s", s, md)
		}
	}
}
