package validatesrunner

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Rerun is a partial run (-only, -run) merged into the snapshot of a full
// run: the rows it replaced or added, and when and how it ran.
type Rerun struct {
	Started     string   `json:"started"`
	Flags       string   `json:"flags"`
	WallSeconds float64  `json:"wall_seconds"`
	Tests       []string `json:"tests"` // "package Test"
}

// Merge returns full with the results of partial in place of its rows of
// the same tests, and partial listed in Reruns. Everything else stays the
// full run's: the other tests, the start time, the wall time. A package
// note (Error) of the full run that names a re-run test is dropped, and
// the partial run's notes are added. Runs of different runners, Beam
// versions or test flags do not merge.
func Merge(full, partial *Run, flags string) (*Run, error) {
	switch {
	case full == nil:
		return nil, fmt.Errorf("vr: no snapshot of a full run to merge into")
	case full.Runner != partial.Runner:
		return nil, fmt.Errorf("vr: cannot merge a run of %s into a snapshot of %s", partial.Runner, full.Runner)
	case full.Beam != partial.Beam:
		return nil, fmt.Errorf("vr: cannot merge a run against Beam %s into a snapshot against Beam %s", partial.Beam, full.Beam)
	case !slices.Equal(full.Args, partial.Args):
		return nil, fmt.Errorf("vr: cannot merge a run with test flags %q into a snapshot with %q", partial.Args, full.Args)
	}
	out := full.Compact()
	var rerun []string
	for _, pp := range partial.Compact().Packages {
		fp := out.Package(pp.Package)
		if fp == nil {
			pp.Filter = ""
			out.Packages = append(out.Packages, pp)
			for _, t := range pp.Tests {
				rerun = append(rerun, pp.Package+" "+t.Name)
			}
			continue
		}
		var names []string
		for _, t := range pp.Tests {
			names = append(names, t.Name)
			rerun = append(rerun, pp.Package+" "+t.Name)
			if old := findTest(fp.Tests, t.Name); old >= 0 {
				fp.Seconds -= fp.Tests[old].Seconds
				fp.Tests[old] = t
			} else {
				fp.Tests = append(fp.Tests, t)
			}
		}
		fp.Seconds = round2(max(fp.Seconds, 0) + pp.Seconds)
		fp.Error = mergeNotes(fp.Error, pp.Error, names)
	}
	out.Sort()
	// Rows re-run again leave the earlier re-run.
	out.Reruns = nil
	for _, r := range full.Reruns {
		r.Tests = slices.DeleteFunc(slices.Clone(r.Tests), func(t string) bool { return slices.Contains(rerun, t) })
		if len(r.Tests) > 0 {
			out.Reruns = append(out.Reruns, r)
		}
	}
	if len(rerun) > 0 {
		out.Reruns = append(out.Reruns, Rerun{Started: partial.Started, Flags: flags, WallSeconds: partial.WallSeconds, Tests: rerun})
	}
	return out, nil
}

func findTest(ts []TestResult, name string) int {
	for i := range ts {
		if ts[i].Name == name {
			return i
		}
	}
	return -1
}

// mergeNotes keeps the notes of old (a package's Error: notes joined by
// "; ") that name none of the re-run tests, and adds those of the re-run.
func mergeNotes(old, rerun string, tests []string) string {
	var notes []string
	for _, n := range splitNotes(old) {
		if !namesAny(n, tests) {
			notes = append(notes, n)
		}
	}
	return strings.Join(uniq(append(notes, splitNotes(rerun)...)), "; ")
}

func splitNotes(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "; ")
}

func namesAny(note string, tests []string) bool {
	for _, t := range tests {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(t) + `\b`).MatchString(note) {
			return true
		}
	}
	return false
}
