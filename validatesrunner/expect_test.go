package validatesrunner

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

const expText = `# header line one
# header line two

test/integration/primitives TestCoGBK pass
test/integration/primitives TestFlatten pass
test/integration/primitives TestTimers fail not yet supported by weir (pending)
test/integration/primitives TestDrain fail TODO: investigate
test/integration/primitives TestGone fail obsolete test
pkg/beam/testing/passert TestCount pass
pkg/beam/testing/passert TestSkipMe skip needs a flag
github.com/apache/beam/sdks/v2/go/test/integration/wordcount TestWordCount pass
`

func mustParse(t *testing.T, s string) *Expectations {
	t.Helper()
	e, err := ParseExpectations(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestParseExpectations(t *testing.T) {
	e := mustParse(t, expText)
	if want := []string{"# header line one", "# header line two"}; !reflect.DeepEqual(e.Header, want) {
		t.Errorf("Header = %q", e.Header)
	}
	if len(e.List) != 8 {
		t.Fatalf("got %d expectations", len(e.List))
	}
	if x := e.Get("test/integration/primitives", "TestTimers"); x == nil || x.Status != Fail || x.Reason != "not yet supported by weir (pending)" {
		t.Errorf("TestTimers = %+v", x)
	}
	if x := e.Get("test/integration/wordcount", "TestWordCount"); x == nil || x.Status != Pass {
		t.Errorf("full import path not shortened: %+v", x)
	}

	for _, bad := range []string{
		"pkg TestA",                      // no status
		"pkg TestA fail",                 // fail without reason
		"pkg TestA skip",                 // skip without reason
		"pkg TestA pass but why",         // pass with reason
		"pkg TestA flaky sometimes",      // unknown status
		"pkg TestA pass\npkg TestA pass", // duplicate
	} {
		if _, err := ParseExpectations(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseExpectations(%q) succeeded, want error", bad)
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	e := mustParse(t, expText)
	var b bytes.Buffer
	if err := e.Format(&b); err != nil {
		t.Fatal(err)
	}
	want := `# header line one
# header line two

test/integration/primitives TestCoGBK pass
test/integration/primitives TestDrain fail TODO: investigate
test/integration/primitives TestFlatten pass
test/integration/primitives TestGone fail obsolete test
test/integration/primitives TestTimers fail not yet supported by weir (pending)

test/integration/wordcount TestWordCount pass

pkg/beam/testing/passert TestCount pass
pkg/beam/testing/passert TestSkipMe skip needs a flag
`
	if b.String() != want {
		t.Errorf("Format:\n%s\nwant:\n%s", b.String(), want)
	}
	again := mustParse(t, b.String())
	if !reflect.DeepEqual(again.List, mustParse(t, want).List) {
		t.Errorf("round trip changed the expectations")
	}
}

// sampleRun: CoGBK regressed, Timers newly passes, Drain still fails,
// TestGone is gone, Flatten passes, passert crashed before TestCount,
// TestSkipMe failed instead of skipping, TestNew is not listed.
func sampleRun() *Run {
	return &Run{Runner: "weir", Packages: []PackageResult{
		{Package: "test/integration/primitives", Tests: []TestResult{
			{Name: "TestCoGBK", Status: Fail, Reason: "job failed: boom"},
			{Name: "TestDrain", Status: Fail, Reason: "hang"},
			{Name: "TestFlatten", Status: Pass},
			{Name: "TestNew", Status: Fail, Reason: "new and broken"},
			{Name: "TestTimers", Status: Pass},
		}},
		{Package: "pkg/beam/testing/passert", Error: "test process ended (signal: killed)", Tests: []TestResult{
			{Name: "TestSkipMe", Status: Fail, Reason: "oops"},
		}},
	}}
}

var allSels = []Selection{{Package: "test/integration/primitives"}, {Package: "pkg/beam/testing/passert"}}

func TestCompare(t *testing.T) {
	rep := Compare(mustParse(t, expText), sampleRun(), allSels)
	if rep.OK() {
		t.Errorf("OK() = true with regressions")
	}
	names := func(ds []Diff) []string {
		var s []string
		for _, d := range ds {
			s = append(s, d.Test+":"+d.Got)
		}
		return s
	}
	if got, want := names(rep.Regressions), []string{"TestCoGBK:fail", "TestCount:missing"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Regressions = %v, want %v", got, want)
	}
	if !strings.Contains(rep.Regressions[1].Reason, "package did not run cleanly") {
		t.Errorf("missing test reason = %q", rep.Regressions[1].Reason)
	}
	if got, want := names(rep.NewlyPassing), []string{"TestTimers:pass"}; !reflect.DeepEqual(got, want) {
		t.Errorf("NewlyPassing = %v, want %v", got, want)
	}
	if got, want := names(rep.Changed), []string{"TestSkipMe:fail"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Changed = %v, want %v", got, want)
	}
	if got, want := names(rep.Unlisted), []string{"TestNew:fail"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Unlisted = %v, want %v", got, want)
	}
	// wordcount is not in the selections: not checked, not missing.
	if rep.Checked != 7 || rep.TODOs != 1 {
		t.Errorf("Checked = %d, TODOs = %d; want 7, 1", rep.Checked, rep.TODOs)
	}
	var b bytes.Buffer
	rep.Write(&b, "expected.txt")
	for _, s := range []string{"REGRESSIONS", "newly passing, update expected.txt", "TestTimers", "WARNING: 1 expected failures"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
}

func TestCompareAllGood(t *testing.T) {
	e := mustParse(t, "p TestA pass\np TestB fail reason\np TestC pass\n")
	r := &Run{Packages: []PackageResult{{Package: "p", Tests: []TestResult{
		{Name: "TestA", Status: Pass}, {Name: "TestB", Status: Fail},
	}}}}
	// Only TestA and TestB are selected (a smoke-style -run filter).
	rep := Compare(e, r, []Selection{{Package: "p", Run: "^(TestA|TestB)$"}})
	if !rep.OK() || rep.Checked != 2 || len(rep.NewlyPassing) != 0 {
		t.Errorf("report = %+v", rep)
	}
}

func TestUpdate(t *testing.T) {
	exp := mustParse(t, expText)
	out, todo := Update(exp, sampleRun(), allSels)
	var b bytes.Buffer
	out.Format(&b)
	want := `# header line one
# header line two

test/integration/primitives TestCoGBK fail TODO: investigate
test/integration/primitives TestDrain fail TODO: investigate
test/integration/primitives TestFlatten pass
test/integration/primitives TestNew fail TODO: investigate
test/integration/primitives TestTimers pass

test/integration/wordcount TestWordCount pass

pkg/beam/testing/passert TestCount pass
pkg/beam/testing/passert TestSkipMe fail TODO: investigate
`
	if b.String() != want {
		t.Errorf("Update:\n%s\nwant:\n%s", b.String(), want)
	}
	var tn []string
	for _, x := range todo {
		tn = append(tn, x.Test)
	}
	if w := []string{"TestCoGBK", "TestDrain", "TestSkipMe", "TestNew"}; !reflect.DeepEqual(tn, w) {
		t.Errorf("todo = %v, want %v", tn, w)
	}
}

func TestUpdateKeepsReasonsAndSkips(t *testing.T) {
	exp := mustParse(t, "p TestA fail known bug #12\np TestB pass\np TestC skip old reason\n")
	r := &Run{Packages: []PackageResult{{Package: "p", Tests: []TestResult{
		{Name: "TestA", Status: Fail, Reason: "different words"},
		{Name: "TestB", Status: Skip, Reason: "c_test.go:5: needs flag"},
		{Name: "TestC", Status: Skip, Reason: "new reason"},
	}}}}
	out, todo := Update(exp, r, []Selection{{Package: "p"}})
	if len(todo) != 0 {
		t.Errorf("todo = %v", todo)
	}
	for test, want := range map[string]Expectation{
		"TestA": {Package: "p", Test: "TestA", Status: Fail, Reason: "known bug #12"},
		"TestB": {Package: "p", Test: "TestB", Status: Skip, Reason: "c_test.go:5: needs flag"},
		"TestC": {Package: "p", Test: "TestC", Status: Skip, Reason: "old reason"},
	} {
		if got := out.Get("p", test); got == nil || *got != want {
			t.Errorf("%s = %+v, want %+v", test, got, want)
		}
	}
}

func TestSelection(t *testing.T) {
	s := Selection{Package: "p", Run: "^(TestA|TestB)$"}
	if !s.Matches("TestA") || s.Matches("TestAB") || !(Selection{}).Matches("anything") {
		t.Errorf("Matches wrong")
	}
	got := FilterSuite(FullSuite, "primitives, pkg/beam,github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/top")
	var ps []string
	for _, s := range got {
		ps = append(ps, s.Package)
	}
	if want := []string{"test/integration/primitives", "pkg/beam", "pkg/beam/transforms/top"}; !reflect.DeepEqual(ps, want) {
		t.Errorf("FilterSuite = %v, want %v", ps, want)
	}
	if _, err := Suite("nope"); err == nil {
		t.Errorf("Suite(nope) succeeded")
	}
}

// The committed expected.txt must parse and be in canonical form, so that
// --update-expectations only shows real changes in a diff.
func TestCommittedExpectations(t *testing.T) {
	e, err := LoadExpectations("expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.List) == 0 {
		t.Fatal("expected.txt is empty")
	}
	b, err := os.ReadFile("expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	var f bytes.Buffer
	e.Format(&f)
	if f.String() != string(b) {
		t.Errorf("expected.txt is not in canonical form; Format gives:\n%s", f.String())
	}
	for _, x := range e.List {
		if pkgRank(x.Package) == len(FullSuite) {
			t.Errorf("expected.txt: %s is not a package of the suite", x.Package)
		}
	}
}
