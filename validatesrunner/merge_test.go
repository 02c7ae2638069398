package validatesrunner

import (
	"reflect"
	"strings"
	"testing"
)

func mergeFixture() (full, partial *Run) {
	args := []string{"--runner=universal"}
	full = &Run{Runner: "weir", Suite: "full", Started: "2026-01-01 00:00", WallSeconds: 400, Beam: "v2.77.0", Args: args,
		Packages: []PackageResult{
			{Package: "test/integration/primitives", Seconds: 125,
				Error: "TestDrain hung and was killed after 2m0s; job server exited and was restarted; TestDrainX hung and was killed after 2m0s",
				Tests: []TestResult{
					{Name: "TestCoGBK", Status: Pass, Seconds: 1, Conns: 1},
					{Name: "TestDrain", Status: Fail, Seconds: 120, Conns: 1, Reason: "vr: killed by the watchdog after 2m0s (per-test timeout)"},
					{Name: "TestDrainX", Status: Fail, Seconds: 4},
				}},
			{Package: "pkg/beam/testing/passert", Seconds: 3, Tests: []TestResult{{Name: "TestCount", Status: Pass, Seconds: 3, Conns: 2}}},
		}}
	partial = &Run{Runner: "weir", Suite: `full (partial: -only "primitives" -run "^TestDrain$")`, Started: "2026-01-02 10:00", WallSeconds: 60,
		Beam: "v2.77.0", Args: args,
		Packages: []PackageResult{
			{Package: "test/integration/primitives", Filter: "^TestDrain$", Seconds: 45, Tests: []TestResult{
				{Name: "TestDrain", Status: Pass, Seconds: 44.5, Conns: 1, Tail: []string{"output"},
					Drains: []DrainRecord{{Job: "go-testdrain-1-1", After: 5.2, Answer: "DRAINING", Final: "DRAINED", Seconds: 39}}},
			}},
		}}
	return full, partial
}

// TestMerge: a partial run replaces only the rows it ran, drops the full
// run's package notes about those tests (and only those), keeps the full
// run's start and wall time, and is listed as a re-run; a second re-run
// of the same rows replaces the first in the list.
func TestMerge(t *testing.T) {
	full, partial := mergeFixture()
	m, err := Merge(full, partial, "-only primitives -run ^TestDrain$")
	if err != nil {
		t.Fatal(err)
	}
	if m.Started != full.Started || m.WallSeconds != full.WallSeconds || m.Suite != "full" {
		t.Errorf("merged run %s, %vs, %q: want the full run's start, wall time and suite", m.Started, m.WallSeconds, m.Suite)
	}
	p := m.Package("test/integration/primitives")
	if p.Error != "job server exited and was restarted; TestDrainX hung and was killed after 2m0s" {
		t.Errorf("package notes %q, want the full run's notes that do not name TestDrain", p.Error)
	}
	if p.Seconds != 50 || p.Filter != "" {
		t.Errorf("package seconds %v, filter %q; want 125 - 120 + 45 and none", p.Seconds, p.Filter)
	}
	d := m.Test("test/integration/primitives", "TestDrain")
	if d.Status != Pass || len(d.Drains) != 1 || d.Tail != nil {
		t.Errorf("TestDrain %+v, want the re-run's pass with its drain and no tail", d)
	}
	if c := m.Test("test/integration/primitives", "TestCoGBK"); c.Seconds != 1 {
		t.Errorf("TestCoGBK %+v changed", c)
	}
	if !reflect.DeepEqual(m.Package("pkg/beam/testing/passert"), full.Package("pkg/beam/testing/passert")) {
		t.Errorf("passert changed")
	}
	want := []Rerun{{Started: "2026-01-02 10:00", Flags: "-only primitives -run ^TestDrain$", WallSeconds: 60,
		Tests: []string{"test/integration/primitives TestDrain"}}}
	if !reflect.DeepEqual(m.Reruns, want) {
		t.Errorf("reruns %+v, want %+v", m.Reruns, want)
	}
	if full.Test("test/integration/primitives", "TestDrain").Status != Fail || len(full.Reruns) != 0 {
		t.Errorf("Merge changed the full run it merged into")
	}

	partial.Started = "2026-01-03 10:00"
	m2, err := Merge(m, partial, "-run TestDrain")
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Reruns) != 1 || m2.Reruns[0].Started != "2026-01-03 10:00" {
		t.Errorf("reruns after a second re-run %+v, want the second only", m2.Reruns)
	}

	md := string(Render([]Column{{Name: "weir", Run: m}}))
	for _, s := range []string{
		"| weir | 2026-01-01 00:00 | full + 1 partial re-run | 6m40s | 3 | 1 | 0 | 4 |",
		"weir: re-run 2026-01-02 10:00 UTC with `-only primitives -run ^TestDrain$` (1m00s), replacing the full run's rows of `test/integration/primitives` TestDrain;",
		"| TestDrain | pass, drained | 44.50 | job server |",
		"## Drained by the harness",
		"- weir `test/integration/primitives` TestDrain (pass): job go-testdrain-1-1 drained through JobService.Drain after it had run 5s; Drain answered DRAINING; the job ended DRAINED 39s later.",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("RESULTS.md lacks %q\n%s", s, md)
		}
	}
}

// TestMergeRefuses runs that are not comparable with the snapshot.
func TestMergeRefuses(t *testing.T) {
	full, partial := mergeFixture()
	if _, err := Merge(nil, partial, ""); err == nil {
		t.Error("merged into no snapshot")
	}
	partial.Beam = "v2.78.0"
	if _, err := Merge(full, partial, ""); err == nil || !strings.Contains(err.Error(), "Beam") {
		t.Errorf("merge across Beam versions: %v", err)
	}
	_, partial = mergeFixture()
	partial.Runner = "prism"
	if _, err := Merge(full, partial, ""); err == nil {
		t.Error("merged prism into weir")
	}
	_, partial = mergeFixture()
	partial.Args = append(partial.Args, "--x")
	if _, err := Merge(full, partial, ""); err == nil {
		t.Error("merged a run with other test flags")
	}
}
