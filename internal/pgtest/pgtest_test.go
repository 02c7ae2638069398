package pgtest

import (
	"fmt"
	"strings"
	"testing"
)

// recordTB notes a skip or a failure instead of ending the test.
type recordTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestURLMissing: without a server a test skips, unless make test's
// WEIR_REQUIRE_POSTGRES=1 asks for the PostgreSQL tests, when it fails.
func TestURLMissing(t *testing.T) {
	t.Setenv("WEIR_PG_URL", "")
	t.Setenv("WEIR_REQUIRE_POSTGRES", "")
	r := &recordTB{TB: t}
	if u := URL(r); u != "" || r.skipped == "" || r.failed != "" {
		t.Errorf("without WEIR_REQUIRE_POSTGRES: url %q, skipped %q, failed %q; want a skip", u, r.skipped, r.failed)
	}
	t.Setenv("WEIR_REQUIRE_POSTGRES", "1")
	r = &recordTB{TB: t}
	URL(r)
	if r.failed == "" || r.skipped != "" || !strings.Contains(r.failed, "make postgres") {
		t.Errorf("with WEIR_REQUIRE_POSTGRES=1: skipped %q, failed %q; want a failure naming make postgres", r.skipped, r.failed)
	}
	t.Setenv("WEIR_PG_URL", "postgres://h/db")
	if u := URL(&recordTB{TB: t}); u != "postgres://h/db" {
		t.Errorf("url %q, want WEIR_PG_URL's", u)
	}
}
