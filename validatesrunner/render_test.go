package validatesrunner

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	weir := &Run{Runner: "weir", Suite: "full", Started: "2026-01-02 03:04", WallSeconds: 125,
		Packages: []PackageResult{
			{Package: "pkg/beam/testing/passert", Tests: []TestResult{
				{Name: "TestCount", Status: Pass, Seconds: 0.5, Conns: 2},
			}},
			{Package: "test/integration/primitives", Error: "TestDrain hung and was killed after 5m0s", Tests: []TestResult{
				{Name: "TestCoGBK", Status: Fail, Seconds: 1.25, Conns: 1, Reason: "pardo_test.go:1: job failed | want <a> got *b* | x_y"},
				{Name: "TestDrain", Status: Fail, Seconds: 300, Reason: "vr: killed"},
			}},
		}}
	prism := &Run{Runner: "prism", Suite: "full", Started: "2026-01-01 00:00", WallSeconds: 42,
		Packages: []PackageResult{
			{Package: "test/integration/primitives", Tests: []TestResult{
				{Name: "TestCoGBK", Status: Pass, Seconds: 0.75, Conns: 1},
				{Name: "TestDrain", Status: Pass, Seconds: 2, Conns: 3},
				{Name: "TestUnit", Status: Skip, Reason: "skipped for reasons"},
			}},
			{Package: "pkg/beam/testing/passert", Tests: []TestResult{
				{Name: "TestCount", Status: Pass, Seconds: 0.25, Conns: 1},
			}},
		}}
	md := string(Render([]Column{{Name: "weir", Run: weir}, {Name: "prism", Run: prism}, {Name: "flink"}}))
	for _, want := range []string{
		"| weir | 2026-01-02 03:04 | full | 2m05s | 1 | 2 | 0 | 3 |",
		"| prism | 2026-01-01 00:00 | full | 42s | 3 | 0 | 1 | 4 |",
		"| flink | not run yet |",
		"| `test/integration/primitives` | 0 / 2 / 0 ⚠ | 301.2 | 2 / 0 / 1 | 2.8 | — | | 2 of 3 |",
		"| **total** | **1 / 2 / 0** | 301.8 | **3 / 0 / 1** | 3.0 | — | | |",
		"| TestCoGBK | **FAIL** | 1.25 | pass | 0.75 | — | | job server |",
		"| TestUnit | — | | skip | 0.00 | — | | local |",
		"⚠ weir, `test/integration/primitives`: TestDrain hung",
		"## weir: failures and skips",
		"- fail `test/integration/primitives` TestCoGBK: pardo_test.go:1: job failed \\| want &lt;a&gt; got \\*b\\* \\| x_y",
		"## prism: failures and skips",
		"- skip `test/integration/primitives` TestUnit: skipped for reasons",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q\n%s", want, md)
		}
	}
	// Packages in suite order: primitives before passert.
	if strings.Index(md, "### `test/integration/primitives`") > strings.Index(md, "### `pkg/beam/testing/passert`") {
		t.Errorf("packages not in suite order")
	}
}
