package validatesrunner

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// RenderJava returns RESULTS.md's section for the Java suite, runners side
// by side (a nil run is shown as not run yet). known holds each runner's
// listed failures with their reasons; a failure's reason is the listed one
// when there is one, else the line of the failure that says what broke.
// Only tests that did not pass everywhere get a row: the suite has hundreds.
func RenderJava(runs []*JavaRun, names []string, known map[string]map[string]string) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Java: Beam's ValidatesRunner tests\n\n")
	p("The test classes of `beam-sdks-java-core` (its `tests` jar, Beam Java %s), category\n", javaBeam(runs))
	p("`ValidatesRunner`, run by Maven Surefire with `TestWeirRunner` (a job-service client that\n")
	p("waits for each job and fails the test with the job's errors; it also checks through the job's\n")
	p("metrics that every PAssert ran) against each server, LOOPBACK (`make vr-java`,\n")
	p("`make vr-java-prism`, `java/vr.sh`). Both runners are driven by the same client and run the same\n")
	p("tests. Excluded by category: for both, UsesExternalService (cross-language expansion services)\n")
	p("and UsesSdkHarnessEnvironment (tests of the SDK's container image); for Prism also the two more\n")
	p("its own Java suite excludes (UsesMultimapState, UsesBoundedTrieMetrics). No single test is\n")
	p("excluded: every other ValidatesRunner test runs, and *known* is a failure listed with its reason\n")
	p("in `java/vr/known-weir.txt` (strict: a listed test that passes fails the run).\n\n")
	p("| runner | run at (UTC) | wall time | run | pass | fail | of which known | skip | excluded by category |\n")
	p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	byName := map[string]map[string]JavaTest{}
	seen := map[string]bool{}
	var rows []string
	for i, r := range runs {
		n := names[i]
		if r == nil {
			p("| %s | not run yet | | | | | | | |\n", n)
			continue
		}
		pass, fail, skip := r.Counts()
		nknown := 0
		byName[n] = map[string]JavaTest{}
		for _, t := range r.Tests {
			byName[n][t.Name] = t
			if _, ok := known[n][t.Name]; ok && t.Status == "fail" {
				nknown++
			}
			if t.Status != "pass" && !seen[t.Name] {
				seen[t.Name] = true
				rows = append(rows, t.Name)
			}
		}
		p("| %s | %s | %s | %d | %d | %d | %d | %d | %s |\n", n, r.Started, dur(r.Seconds),
			len(r.Tests), pass, fail, nknown, skip, excludedSummary(r.Excluded))
	}
	sort.Strings(rows)
	if len(rows) == 0 {
		return b.Bytes()
	}
	p("\nEvery test that did not pass on some runner (the others passed on all):\n\n")
	outcomeHeader(&b, names)
	for _, name := range rows {
		p("| `%s` |", strings.TrimPrefix(name, "org.apache.beam.sdk."))
		var reasons []string
		for _, n := range names {
			t, ok := byName[n][name]
			reason, listed := known[n][name]
			switch {
			case !ok:
				p(" — |")
			case t.Status == "pass":
				p(" pass |")
			case t.Status == "fail" && listed:
				p(" **known** |")
			case t.Status == "fail":
				p(" **FAIL** |")
				reason = t.Reason
			default:
				p(" skip |")
				reason = t.Reason
			}
			if ok && t.Status != "pass" && reason != "" {
				reasons = append(reasons, n+": "+firstLine(reason))
			}
		}
		p(" %s |\n", strings.Join(dedupeReasons(reasons), "; "))
	}
	return b.Bytes()
}

func javaBeam(runs []*JavaRun) string {
	for _, r := range runs {
		if r != nil && r.Beam != "" {
			return r.Beam
		}
	}
	return "?"
}

// excludedSummary says how many tests each category left out.
func excludedSummary(ex []JavaExcluded) string {
	counts := map[string]int{}
	var cats []string
	for _, e := range ex {
		if counts[e.Category] == 0 {
			cats = append(cats, e.Category)
		}
		counts[e.Category]++
	}
	sort.Strings(cats)
	parts := make([]string, len(cats))
	for i, c := range cats {
		parts[i] = fmt.Sprintf("%s %d", c, counts[c])
	}
	if len(parts) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d: %s", len(ex), strings.Join(parts, ", "))
}
