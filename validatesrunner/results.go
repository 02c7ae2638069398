// Package validatesrunner runs Beam's own ValidatesRunner-style Go test
// packages against a Beam job server (weir or Prism) in strict mode, records
// per-test results, compares them with validatesrunner/expected.txt and
// renders validatesrunner/RESULTS.md. See README.md in this folder.
package validatesrunner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// BeamModule is the import path prefix of the Beam Go SDK packages we run.
const BeamModule = "github.com/apache/beam/sdks/v2/go/"

// TestResult is the outcome of one top-level test (or example).
type TestResult struct {
	Name    string  `json:"name"`
	Status  string  `json:"status"` // pass, fail or skip
	Seconds float64 `json:"seconds"`
	// Conns is how many connections the test process opened to the job
	// server while this test ran (the harness puts a counting TCP proxy in
	// front of the job server; the universal runner dials once per
	// pipeline). Zero means the test did not exercise the runner at all.
	Conns          int      `json:"server_conns"`
	Reason         string   `json:"reason,omitempty"` // one line, for fail/skip
	FailedSubtests []string `json:"failed_subtests,omitempty"`
	// Drains are what the harness did to drain the test's jobs, for a
	// test in DrainTests.
	Drains []DrainRecord `json:"drains,omitempty"`
	Tail   []string      `json:"tail,omitempty"` // last output lines, for fail/skip
}

// PackageResult is the outcome of one Go test package.
type PackageResult struct {
	Package string  `json:"package"` // short name, relative to BeamModule
	Filter  string  `json:"filter,omitempty"`
	Seconds float64 `json:"seconds"`
	// Error is set when the package could not be built or its test process
	// did not finish normally (crash, timeout, killed by the watchdog).
	Error   string       `json:"error,omitempty"`
	Listed  []string     `json:"listed,omitempty"` // tests the binary reported with -test.list
	Tests   []TestResult `json:"tests"`
	Restart int          `json:"restarts,omitempty"` // test-process restarts after a crash or hang
}

// Run is the result of running a suite against one runner.
type Run struct {
	Runner      string          `json:"runner"`
	Suite       string          `json:"suite"`
	Started     string          `json:"started"`
	WallSeconds float64         `json:"wall_seconds"`
	GoVersion   string          `json:"go_version,omitempty"`
	Beam        string          `json:"beam,omitempty"`
	Server      string          `json:"server,omitempty"`
	Args        []string        `json:"args,omitempty"`
	Jobs        int             `json:"parallel_packages,omitempty"`
	Packages    []PackageResult `json:"packages"`
	// Reruns are the partial runs merged into this snapshot (Merge).
	Reruns []Rerun `json:"reruns,omitempty"`
}

// Counts holds pass/fail/skip totals.
type Counts struct {
	Pass, Fail, Skip int
	Seconds          float64
}

// Add adds one result.
func (c *Counts) Add(t TestResult) {
	switch t.Status {
	case Pass:
		c.Pass++
	case Skip:
		c.Skip++
	default:
		c.Fail++
	}
	c.Seconds += t.Seconds
}

// Total is the number of results.
func (c Counts) Total() int { return c.Pass + c.Fail + c.Skip }

// Package returns the result of package pkg, or nil.
func (r *Run) Package(pkg string) *PackageResult {
	if r == nil {
		return nil
	}
	for i := range r.Packages {
		if r.Packages[i].Package == pkg {
			return &r.Packages[i]
		}
	}
	return nil
}

// Test returns the result of test name in package pkg, or nil.
func (r *Run) Test(pkg, name string) *TestResult {
	p := r.Package(pkg)
	if p == nil {
		return nil
	}
	for i := range p.Tests {
		if p.Tests[i].Name == name {
			return &p.Tests[i]
		}
	}
	return nil
}

// Totals returns the totals of the whole run.
func (r *Run) Totals() Counts {
	var c Counts
	for _, p := range r.Packages {
		for _, t := range p.Tests {
			c.Add(t)
		}
	}
	return c
}

// Sort orders tests of each package by name and packages by suite order.
func (r *Run) Sort() {
	for i := range r.Packages {
		sort.SliceStable(r.Packages[i].Tests, func(a, b int) bool {
			return r.Packages[i].Tests[a].Name < r.Packages[i].Tests[b].Name
		})
	}
}

// Compact returns a copy without output tails, for the committed snapshot.
func (r *Run) Compact() *Run {
	c := *r
	c.Packages = nil
	for _, p := range r.Packages {
		p.Tests = append([]TestResult(nil), p.Tests...)
		p.Listed = nil
		for i := range p.Tests {
			p.Tests[i].Tail = nil
		}
		c.Packages = append(c.Packages, p)
	}
	return &c
}

// Save writes r as indented JSON to path, creating the directory.
func (r *Run) Save(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// readIfPresent reads path; a missing file is (nil, nil), a run never made.
func readIfPresent(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	return b, err
}

// LoadRun reads a results file. A missing file gives (nil, nil).
func LoadRun(path string) (*Run, error) {
	b, err := readIfPresent(path)
	if b == nil || err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &r, nil
}

// ShortPkg strips the Beam module prefix from an import path.
func ShortPkg(p string) string { return strings.TrimPrefix(p, BeamModule) }
