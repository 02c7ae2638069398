package validatesrunner

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// JavaRun is one run of Beam's Java ValidatesRunner tests (the test classes
// of beam-sdks-java-core, category ValidatesRunner) against one job server,
// driven by Maven Surefire (java/vr.sh) and imported from its reports.
type JavaRun struct {
	Runner   string         `json:"runner"`
	Started  string         `json:"started"`
	Seconds  float64        `json:"seconds"`
	Beam     string         `json:"beam_java"`
	Tests    []JavaTest     `json:"tests"`
	Excluded []JavaExcluded `json:"excluded"`
}

// JavaTest is one test's outcome: pass, fail or skip (JUnit's @Ignore or a
// failed assumption, the test's own doing).
type JavaTest struct {
	Name    string  `json:"name"` // Class#method, inner classes with $
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
	Reason  string  `json:"reason,omitempty"`
}

// JavaExcluded is a ValidatesRunner test the run left out because of one of
// its categories.
type JavaExcluded struct {
	Name     string `json:"name"`
	Category string `json:"category"`
}

// ImportSurefire reads the TEST-*.xml reports Surefire wrote in dir.
func ImportSurefire(dir string) ([]JavaTest, error) {
	files, err := filepath.Glob(filepath.Join(dir, "TEST-*.xml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("java results: no TEST-*.xml in %s", dir)
	}
	var tests []JavaTest
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s junitSuite // Surefire's root is one <testsuite>
		if err := xml.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("java results %s: %w", f, err)
		}
		for _, c := range s.Cases {
			t := JavaTest{Name: c.Classname + "#" + c.Name, Status: "pass", Seconds: c.Time}
			switch {
			case c.Failure != nil:
				t.Status, t.Reason = "fail", javaReason(c.Failure)
			case c.Error != nil:
				t.Status, t.Reason = "fail", javaReason(c.Error)
			case c.Skipped != nil:
				t.Status, t.Reason = "skip", firstLine(c.Skipped.Message)
			}
			tests = append(tests, t)
		}
	}
	return dedupeJava(tests), nil
}

// dedupeJava keeps one outcome per test, sorted by name. Surefire runs the
// nested classes of an Enclosed test class (GroupByKeyTest's) twice, once
// through the outer class, and reports both under the nested class; where
// the two runs differ, the failure is kept.
func dedupeJava(tests []JavaTest) []JavaTest {
	sort.SliceStable(tests, func(i, j int) bool { return tests[i].Name < tests[j].Name })
	out := tests[:0]
	for _, t := range tests {
		if n := len(out); n > 0 && out[n-1].Name == t.Name {
			if t.Status == "fail" && out[n-1].Status != "fail" {
				out[n-1] = t
			}
			continue
		}
		out = append(out, t)
	}
	return out
}

// javaReason picks the lines of a failure that say what went wrong: the
// first cause a job's error carries ("Caused by:", with the lines of its
// message up to its stack), else the first line naming an exception or an
// assertion, else the first line.
func javaReason(m *junitMessage) string {
	text := m.Message
	if text == "" {
		text = m.Body
	}
	lines := strings.Split(text, "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, "Caused by: ") {
			at = i
			lines[i] = l[strings.Index(l, "Caused by: ")+len("Caused by: "):]
			break
		}
	}
	if at < 0 {
		for i, l := range lines {
			if strings.Contains(l, "Exception") || strings.Contains(l, "Error:") {
				at = i
				break
			}
		}
	}
	if at < 0 {
		at = 0
	}
	var parts []string
	for _, l := range lines[at:min(at+4, len(lines))] {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "at ") || strings.HasPrefix(l, "Caused by") && len(parts) > 0 {
			break
		}
		if l != "" {
			parts = append(parts, l)
		}
	}
	pick := strings.Join(parts, " ")
	if pick == "" {
		pick = m.Type
	}
	return firstLine(pick)
}

// ReadJavaExcluded reads the list java/vr.sh makes of the tests left out
// by category: "Class#method<TAB>Category" lines.
func ReadJavaExcluded(path string) ([]JavaExcluded, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []JavaExcluded
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, cat, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		out = append(out, JavaExcluded{Name: name, Category: cat})
	}
	return out, sc.Err()
}

// LoadJavaKnown reads a runner's known failures: "Class#method<TAB>reason"
// lines; blank lines and lines starting with "#" are comments. An empty
// path is no list.
func LoadJavaKnown(path string) (map[string]string, error) {
	known := map[string]string{}
	if path == "" {
		return known, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, "\t")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: want test<TAB>reason", path, n)
		}
		known[strings.TrimSpace(name)] = strings.TrimSpace(reason)
	}
	return known, sc.Err()
}

// CheckJava compares a run with the known failures: failures not listed,
// and listed tests that ran and passed (strict: a fixed test must leave the
// list), except those whose reason says they are flaky ("flaky: ...").
func CheckJava(r *JavaRun, known map[string]string) (unexpected, fixed []string) {
	for _, t := range r.Tests {
		reason, listed := known[t.Name]
		switch {
		case t.Status == "fail" && !listed:
			unexpected = append(unexpected, t.Name+": "+t.Reason)
		case t.Status == "pass" && listed && !strings.HasPrefix(reason, "flaky:"):
			fixed = append(fixed, t.Name)
		}
	}
	return unexpected, fixed
}

// Counts tallies a run.
func (r *JavaRun) Counts() (pass, fail, skip int) {
	for _, t := range r.Tests {
		switch t.Status {
		case "pass":
			pass++
		case "fail":
			fail++
		default:
			skip++
		}
	}
	return pass, fail, skip
}

// JavaResultsPath is where runner's Java run is kept.
func JavaResultsPath(dir, runner string) string {
	return filepath.Join(dir, "java-"+runner+".json")
}

// Save writes the run as JSON.
func (r *JavaRun) Save(path string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// LoadJavaRun reads a run Save wrote; a missing file is (nil, nil).
func LoadJavaRun(path string) (*JavaRun, error) {
	b, err := readIfPresent(path)
	if b == nil || err != nil {
		return nil, err
	}
	var r JavaRun
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("java results %s: %w", path, err)
	}
	return &r, nil
}
