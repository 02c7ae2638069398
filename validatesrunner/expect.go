package validatesrunner

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// TODOReason is the reason --update-expectations gives a new failure.
const TODOReason = "TODO: investigate"

// Expectation is one line of expected.txt.
type Expectation struct {
	Package string
	Test    string
	Status  string // pass, fail or skip
	Reason  string // required for fail and skip
}

// Expectations is the parsed expected.txt: a comment header plus one
// expectation per top-level test.
type Expectations struct {
	Header []string // leading comment lines, kept on rewrite
	List   []Expectation
}

// Get returns the expectation for pkg/test, or nil.
func (e *Expectations) Get(pkg, test string) *Expectation {
	for i := range e.List {
		if e.List[i].Package == pkg && e.List[i].Test == test {
			return &e.List[i]
		}
	}
	return nil
}

// ParseExpectations reads the expectation format:
//
//	# comment
//	<package> <Test> pass
//	<package> <Test> fail <reason, free text to end of line>
//	<package> <Test> skip <reason>
//
// package is relative to github.com/apache/beam/sdks/v2/go/.
func ParseExpectations(r io.Reader) (*Expectations, error) {
	e := &Expectations{}
	sc := bufio.NewScanner(r)
	n, seen, body := 0, map[string]bool{}, false
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			if !body && strings.HasPrefix(line, "#") {
				e.Header = append(e.Header, line)
			}
			continue
		}
		body = true
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want `<package> <Test> pass|fail <reason>|skip <reason>`, got %q", n, line)
		}
		x := Expectation{Package: ShortPkg(f[0]), Test: f[1], Status: f[2]}
		rest := strings.TrimSpace(strings.Join(f[3:], " "))
		switch x.Status {
		case Pass:
			if rest != "" {
				return nil, fmt.Errorf("line %d: pass takes no reason: %q", n, line)
			}
		case Fail, Skip:
			if rest == "" {
				return nil, fmt.Errorf("line %d: %s needs a reason: %q", n, x.Status, line)
			}
			x.Reason = rest
		default:
			return nil, fmt.Errorf("line %d: status %q is not pass, fail or skip", n, x.Status)
		}
		k := x.Package + " " + x.Test
		if seen[k] {
			return nil, fmt.Errorf("line %d: %s %s listed twice", n, x.Package, x.Test)
		}
		seen[k] = true
		e.List = append(e.List, x)
	}
	return e, sc.Err()
}

// LoadExpectations reads path; a missing file gives an empty set.
func LoadExpectations(path string) (*Expectations, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return &Expectations{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	e, err := ParseExpectations(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return e, nil
}

// Format writes e in the file format, grouped by package in suite order.
func (e *Expectations) Format(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, h := range e.Header {
		fmt.Fprintln(bw, h)
	}
	list := append([]Expectation(nil), e.List...)
	sort.SliceStable(list, func(i, j int) bool {
		a, b := pkgRank(list[i].Package), pkgRank(list[j].Package)
		if a != b {
			return a < b
		}
		if list[i].Package != list[j].Package {
			return list[i].Package < list[j].Package
		}
		return list[i].Test < list[j].Test
	})
	prev := ""
	for _, x := range list {
		if x.Package != prev {
			fmt.Fprintln(bw)
			prev = x.Package
		}
		if x.Status == Pass {
			fmt.Fprintf(bw, "%s %s %s\n", x.Package, x.Test, x.Status)
		} else {
			fmt.Fprintf(bw, "%s %s %s %s\n", x.Package, x.Test, x.Status, OneLine(x.Reason, 300))
		}
	}
	return bw.Flush()
}

// Save writes e to path.
func (e *Expectations) Save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := e.Format(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func pkgRank(p string) int {
	for i, s := range FullSuite {
		if s.Package == p {
			return i
		}
	}
	return len(FullSuite)
}

// Diff is one test whose result differs from its expectation.
type Diff struct {
	Package, Test string
	Want          string // expected status ("" if not in expected.txt)
	Got           string // actual status ("missing" if it did not run)
	Reason        string // failure reason, if any
}

func (d Diff) String() string {
	s := fmt.Sprintf("%s %s: want %s, got %s", d.Package, d.Test, orDash(d.Want), d.Got)
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "(not listed)"
	}
	return s
}

// Missing is the Got value of an expected test that produced no result.
const Missing = "missing"

// Report is the outcome of comparing a run with the expectations.
type Report struct {
	Regressions  []Diff // expected pass; failed, skipped or missing: the run fails
	NewlyPassing []Diff // expected fail or skip; passed: update expected.txt
	Changed      []Diff // fail<->skip changes, informational
	Unlisted     []Diff // results for tests not in expected.txt
	Checked      int    // expectations in scope
	TODOs        int    // expected failures in scope whose reason still starts with TODO
}

// OK reports whether there are no regressions.
func (r *Report) OK() bool { return len(r.Regressions) == 0 }

// inScope reports whether an expectation is covered by the selections.
func inScope(sels []Selection, pkg, test string) bool {
	for _, s := range sels {
		if s.Package == pkg && s.Matches(test) {
			return true
		}
	}
	return false
}

// Compare checks run against the expectations, limited to the tests the
// selections cover (so a smoke run does not report the rest as missing).
func Compare(exp *Expectations, run *Run, sels []Selection) *Report {
	rep := &Report{}
	for _, x := range exp.List {
		if !inScope(sels, x.Package, x.Test) {
			continue
		}
		rep.Checked++
		if x.Status != Pass && strings.HasPrefix(x.Reason, "TODO") {
			rep.TODOs++
		}
		t := run.Test(x.Package, x.Test)
		got, reason := Missing, ""
		if t != nil {
			got, reason = t.Status, t.Reason
		} else if p := run.Package(x.Package); p != nil && p.Error != "" {
			reason = "package did not run cleanly: " + OneLine(p.Error, 200)
		} else {
			reason = "no result (test not found or not run)"
		}
		d := Diff{Package: x.Package, Test: x.Test, Want: x.Status, Got: got, Reason: reason}
		switch {
		case x.Status == got:
		case x.Status == Pass:
			rep.Regressions = append(rep.Regressions, d)
		case got == Pass:
			d.Reason = ""
			rep.NewlyPassing = append(rep.NewlyPassing, d)
		case got == Missing:
			// An expected failure that did not run: nothing to learn.
		default:
			rep.Changed = append(rep.Changed, d)
		}
	}
	for _, p := range run.Packages {
		for _, t := range p.Tests {
			if exp.Get(p.Package, t.Name) == nil {
				rep.Unlisted = append(rep.Unlisted, Diff{Package: p.Package, Test: t.Name, Got: t.Status, Reason: t.Reason})
			}
		}
	}
	return rep
}

// Write prints the report for humans.
func (r *Report) Write(w io.Writer, expPath string) {
	section := func(title string, ds []Diff) {
		if len(ds) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s (%d):\n", title, len(ds))
		for _, d := range ds {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	section("REGRESSIONS: expected to pass but did not", r.Regressions)
	section(fmt.Sprintf("newly passing, update %s (make vr VRFLAGS=--update-expectations)", expPath), r.NewlyPassing)
	section("changed between fail and skip", r.Changed)
	section(fmt.Sprintf("not listed in %s", expPath), r.Unlisted)
	if r.TODOs > 0 {
		fmt.Fprintf(w, "\nWARNING: %d expected failures in %s still have reason %q: replace it with the real reason\n", r.TODOs, expPath, TODOReason)
	}
	fmt.Fprintf(w, "\nexpectations checked: %d, regressions: %d, newly passing: %d, unlisted: %d\n",
		r.Checked, len(r.Regressions), len(r.NewlyPassing), len(r.Unlisted))
}

// Update returns new expectations that match run for every test the
// selections cover: passes become `pass`; failures and skips keep the
// reason already written for them, and new failures get TODOReason (they
// are returned in todo so the caller can flag them). Expectations outside
// the selections, and those of packages that did not run cleanly, are kept.
func Update(exp *Expectations, run *Run, sels []Selection) (out *Expectations, todo []Expectation) {
	out = &Expectations{Header: append([]string(nil), exp.Header...)}
	seen := map[string]bool{}
	for _, x := range exp.List {
		seen[x.Package+" "+x.Test] = true
		if !inScope(sels, x.Package, x.Test) {
			out.List = append(out.List, x)
			continue
		}
		t := run.Test(x.Package, x.Test)
		if t == nil {
			p := run.Package(x.Package)
			if p == nil || p.Error != "" {
				out.List = append(out.List, x) // could not tell; keep
			}
			// else: the test is gone from the package; drop it.
			continue
		}
		out.List = append(out.List, updated(x, *t, &todo))
	}
	for _, p := range run.Packages {
		for _, t := range p.Tests {
			if seen[p.Package+" "+t.Name] {
				continue
			}
			out.List = append(out.List, updated(Expectation{Package: p.Package, Test: t.Name}, t, &todo))
		}
	}
	return out, todo
}

func updated(x Expectation, t TestResult, todo *[]Expectation) Expectation {
	switch t.Status {
	case Pass:
		return Expectation{Package: x.Package, Test: x.Test, Status: Pass}
	case Skip:
		reason := x.Reason
		if x.Status != Skip || reason == "" {
			reason = t.Reason
			if reason == "" {
				reason = "skipped"
			}
		}
		return Expectation{Package: x.Package, Test: x.Test, Status: Skip, Reason: reason}
	default:
		if x.Status == Fail && x.Reason != "" {
			if strings.HasPrefix(x.Reason, "TODO") {
				*todo = append(*todo, x)
			}
			return x
		}
		n := Expectation{Package: x.Package, Test: x.Test, Status: Fail, Reason: TODOReason}
		*todo = append(*todo, n)
		return n
	}
}
