package validatesrunner

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// PythonRun is one run of Beam's Python portable-runner suite
// (python/weir_runner_test.py) against one job server, as pytest's JUnit
// XML report records it (make vr-python, make vr-python-prism).
type PythonRun struct {
	Runner  string
	Started string
	Seconds float64
	Tests   []PythonTest
}

// PythonTest is one test's outcome: pass, fail, skip or xfail (a known
// failure, listed with its reason in weir_runner_test.py).
type PythonTest struct {
	Name    string
	Status  string
	Seconds float64
	Reason  string
}

type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Timestamp string      `xml:"timestamp,attr"`
	Time      float64     `xml:"time,attr"`
	Cases     []junitCase `xml:"testcase"`
}

// junitCase is one test case of a JUnit XML report, pytest's or Surefire's.
type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure"`
	Error     *junitMessage `xml:"error"`
	Skipped   *junitMessage `xml:"skipped"`
}

type junitMessage struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// ReadPythonRun reads the JUnit XML report of runner's Python suite run;
// a missing file is (nil, nil): never run.
func ReadPythonRun(path, runner string) (*PythonRun, error) {
	b, err := readIfPresent(path)
	if b == nil || err != nil {
		return nil, err
	}
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("python results %s: %w", path, err)
	}
	r := &PythonRun{Runner: runner}
	for _, s := range doc.Suites {
		r.Seconds += s.Time
		if r.Started == "" && len(s.Timestamp) >= 16 {
			r.Started = strings.Replace(s.Timestamp[:16], "T", " ", 1)
		}
		for _, c := range s.Cases {
			t := PythonTest{Name: c.Name, Status: "pass", Seconds: c.Time}
			switch {
			case c.Failure != nil:
				t.Status, t.Reason = "fail", firstLine(c.Failure.Message)
			case c.Error != nil:
				t.Status, t.Reason = "fail", firstLine(c.Error.Message)
			case c.Skipped != nil && c.Skipped.Type == "pytest.xfail":
				t.Status, t.Reason = "xfail", firstLine(c.Skipped.Message)
			case c.Skipped != nil:
				t.Status, t.Reason = "skip", firstLine(c.Skipped.Message)
			}
			r.Tests = append(r.Tests, t)
		}
	}
	return r, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const max = 240
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// PythonResultsPath is where runner's report of the Python suite is kept.
func PythonResultsPath(dir, runner string) string {
	return filepath.Join(dir, "python-"+runner+".xml")
}

// Counts tallies a run: xfail counts as a failure, since the test fails.
func (r *PythonRun) Counts() (pass, fail, skip int) {
	for _, t := range r.Tests {
		switch t.Status {
		case "pass":
			pass++
		case "skip":
			skip++
		default:
			fail++
		}
	}
	return pass, fail, skip
}

// RenderPython returns RESULTS.md's section for the Python suite, runners
// side by side; a nil run is shown as not run yet.
func RenderPython(runs []*PythonRun, names []string) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Python: Beam's portable-runner suite\n\n")
	p("`python/weir_runner_test.py` is Beam's own `PortableRunnerTest` (apache-beam 2.77.0,\n")
	p("which inherits `FnApiRunnerTest`) with the job server started as a subprocess, as\n")
	p("Beam's `prism_runner_test.py` starts Prism; LOOPBACK workers, in batch and with\n")
	p("`--streaming` (Python then skips its pre-optimization: no lifted or packed combines).\n")
	p("The same class runs against both servers (`make vr-python`, `make vr-python-prism`). A skip is\n")
	p("Beam's own or the suite's, with its reason; *known* is a failure listed in\n")
	p("`KNOWN_FAILURES` with its reason (run, and strict: a pass would fail the run).\n\n")
	p("| runner | run at (UTC) | wall time | pass | fail | of which known | skip | total |\n")
	p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	byName := map[string]map[string]PythonTest{}
	var tests []string
	seen := map[string]bool{}
	for i, r := range runs {
		if r == nil {
			p("| %s | not run yet | | | | | | |\n", names[i])
			continue
		}
		pass, fail, skip := r.Counts()
		known := 0
		byName[names[i]] = map[string]PythonTest{}
		for _, t := range r.Tests {
			byName[names[i]][t.Name] = t
			if t.Status == "xfail" {
				known++
			}
			if !seen[t.Name] {
				seen[t.Name] = true
				tests = append(tests, t.Name)
			}
		}
		p("| %s | %s | %s | %d | %d | %d | %d | %d |\n", names[i], r.Started, dur(r.Seconds), pass, fail, known, skip, len(r.Tests))
	}
	sort.Strings(tests)
	p("\n")
	outcomeHeader(&b, names)
	for _, name := range tests {
		p("| %s |", name)
		var reasons []string
		for _, n := range names {
			t, ok := byName[n][name]
			switch {
			case !ok:
				p(" — |")
			case t.Status == "pass":
				p(" pass |")
			case t.Status == "xfail":
				p(" **known** |")
			case t.Status == "fail":
				p(" **FAIL** |")
			default:
				p(" skip |")
			}
			if ok && t.Reason != "" {
				reasons = append(reasons, n+": "+t.Reason)
			}
		}
		p(" %s |\n", strings.Join(dedupeReasons(reasons), "; "))
	}
	return b.Bytes()
}

// outcomeHeader writes the head of a per-test table: a column per runner
// and one for the reasons.
func outcomeHeader(b *bytes.Buffer, names []string) {
	b.WriteString("| test |")
	for _, n := range names {
		fmt.Fprintf(b, " %s |", n)
	}
	b.WriteString(" why not a pass |\n| --- |")
	for range names {
		b.WriteString(" :---: |")
	}
	b.WriteString(" --- |\n")
}

// dedupeReasons says a reason once when every runner gives the same one.
func dedupeReasons(rs []string) []string {
	if len(rs) < 2 {
		return rs
	}
	first := rs[0][strings.IndexByte(rs[0], ':')+2:]
	for _, r := range rs[1:] {
		if r[strings.IndexByte(r, ':')+2:] != first {
			return rs
		}
	}
	return []string{first}
}
