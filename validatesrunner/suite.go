package validatesrunner

import (
	"fmt"
	"regexp"
	"strings"
)

// Selection is one Go test package to run, optionally narrowed to the
// top-level tests matching Run (Go's -run syntax, matched against the
// top-level name only).
type Selection struct {
	Package string // short name, relative to BeamModule
	Run     string // empty: all tests
	Import  string // import path or ./dir to build; empty: BeamModule + Package
}

// ImportPath is the full import path of the package.
func (s Selection) ImportPath() string {
	if s.Import != "" {
		return s.Import
	}
	return BeamModule + s.Package
}

// Matches reports whether a top-level test name is in the selection.
func (s Selection) Matches(name string) bool {
	if s.Run == "" {
		return true
	}
	re, err := regexp.Compile(s.Run)
	if err != nil {
		return false
	}
	return re.MatchString(name)
}

// FullSuite is every package `make vr` runs, in order (the slow,
// runner-heavy packages first so they start while the machine is fresh).
var FullSuite = []Selection{
	{Package: "test/integration/primitives"},
	{Package: "test/integration/wordcount"},
	{Package: "test/integration/synthetic"},
	{Package: "test/regression"},
	{Package: "pkg/beam"},
	{Package: "pkg/beam/testing/passert"},
	{Package: "pkg/beam/io/textio"},
	{Package: "pkg/beam/io/fileio"},
	{Package: "pkg/beam/transforms/batch"},
	{Package: "pkg/beam/transforms/filter"},
	{Package: "pkg/beam/transforms/periodic"},
	{Package: "pkg/beam/transforms/stats"},
	{Package: "pkg/beam/transforms/top"},
	{Package: "examples/snippets"},
}

// SmokeSuite is the small fixed subset `make vr-smoke` (and so `make test`)
// runs: the word count integration test, the passert package (which checks
// that both passing and failing pipelines are reported correctly), and the
// core primitives (ParDo with multiple outputs and side inputs, Flatten,
// CoGBK, Reshuffle). Every test in it is expected to pass on weir.
var SmokeSuite = []Selection{
	{Package: "test/integration/wordcount"},
	{Package: "pkg/beam/testing/passert"},
	{Package: "test/integration/primitives", Run: "^(TestParDoMultiOutput|TestParDoSideInput|TestParDoKVSideInput|TestFlatten|TestCoGBK|TestReshuffle)$"},
}

// DrainTest names a test whose pipeline never ends by itself: it passes
// only if something outside the test drains its job. The harness does,
// through the job server's JobService Drain call, as an operator would.
type DrainTest struct {
	Package string // short name, relative to BeamModule
	Test    string
}

// DrainTests are the tests the harness drains. Beam's own runs never
// drain them: every runner's filter list in test/integration, Dataflow's
// included ("Dataflow does not drain jobs by itself"), skips TestDrain.
var DrainTests = []DrainTest{
	// An SDF that claims positions for ever, with a TruncateRestriction
	// that keeps 20 more (test/integration/primitives/drain.go).
	{Package: "test/integration/primitives", Test: "TestDrain"},
}

// NeedsDrain reports whether the harness drains the jobs of pkg's test.
func NeedsDrain(pkg, test string) bool { return needsDrain(DrainTests, pkg, test) }

func needsDrain(list []DrainTest, pkg, test string) bool {
	for _, d := range list {
		if d.Package == pkg && d.Test == test {
			return true
		}
	}
	return false
}

// Suite returns the named suite ("full" or "smoke").
func Suite(name string) ([]Selection, error) {
	switch name {
	case "full", "":
		return FullSuite, nil
	case "smoke":
		return SmokeSuite, nil
	}
	return nil, fmt.Errorf("unknown suite %q (want full or smoke)", name)
}

// FilterSuite keeps the selections whose package matches one of the
// comma-separated substrings in only (empty keeps all).
func FilterSuite(s []Selection, only string) []Selection {
	if only == "" {
		return s
	}
	var out []Selection
	for _, sel := range s {
		for _, o := range strings.Split(only, ",") {
			if o = strings.TrimSpace(o); o != "" && (sel.Package == o || strings.HasSuffix(sel.Package, "/"+o) || sel.Package == strings.TrimPrefix(o, BeamModule)) {
				out = append(out, sel)
				break
			}
		}
	}
	return out
}
