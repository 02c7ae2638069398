package uitest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTestID(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{TestID("job-row"), `[data-testid="job-row"]`},
		{TestID("stage-node", "data-stage-name", `Say "hi" \ bye`), `[data-testid="stage-node"][data-stage-name="Say \"hi\" \\ bye"]`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

// recordTB notes a skip or a failure instead of ending the test.
type recordTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestChromiumMissing(t *testing.T) {
	t.Setenv("WEIR_CHROMIUM", filepath.Join(t.TempDir(), "no-chromium"))

	t.Setenv("WEIR_REQUIRE_CHROMIUM", "")
	r := &recordTB{TB: t}
	if p := Chromium(r); p != "" || r.skipped == "" || r.failed != "" {
		t.Errorf("without WEIR_REQUIRE_CHROMIUM: path %q, skipped %q, failed %q; want a skip", p, r.skipped, r.failed)
	}

	t.Setenv("WEIR_REQUIRE_CHROMIUM", "1")
	r = &recordTB{TB: t}
	Chromium(r)
	if r.failed == "" || r.skipped != "" || !strings.Contains(r.failed, "internal/tools/chromium.sh") {
		t.Errorf("with WEIR_REQUIRE_CHROMIUM=1: skipped %q, failed %q; want a failure naming chromium.sh", r.skipped, r.failed)
	}
}

func TestChromiumFromEnv(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "chromium")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WEIR_CHROMIUM", exe)
	if p, err := ChromiumPath(); p != exe || err != nil {
		t.Errorf("ChromiumPath() = %q, %v; want %q", p, err, exe)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WEIR_CHROMIUM", plain)
	if _, err := ChromiumPath(); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("a non-executable WEIR_CHROMIUM: err = %v", err)
	}
}

const page = `<!doctype html><title>t</title>
<p data-testid="count">0</p>
<button data-testid="more" onclick="document.querySelector('[data-testid=count]').textContent = String(++n)">more</button>
<button data-testid="throw" onclick="throw new Error('deliberate')">throw</button>
<script>let n = 0;</script>`

// TestHelpers drives a small page with each helper, and checks that an
// exception in the page is caught.
func TestHelpers(t *testing.T) {
	b := New(t, AllowPageErrors(), WithWindowSize(800, 600))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)

	b.Navigate(srv.URL)
	b.WaitVisible(TestID("more"))
	if got := b.Text(TestID("count")); got != "0" {
		t.Errorf("count = %q", got)
	}
	b.Click(TestID("more"))
	b.Click(TestID("more"))
	b.WaitText(TestID("count"), Equals("2"))
	if got := b.Texts("button"); strings.Join(got, ",") != "more,throw" {
		t.Errorf("buttons = %q", got)
	}
	if got := b.Attrs("button", "data-testid"); strings.Join(got, ",") != "more,throw" {
		t.Errorf("button test ids = %q", got)
	}
	b.WaitCount("button", 2)
	if n := Eval[int](b, "n"); n != 2 {
		t.Errorf("n = %d", n)
	}
	b.SetHash("#/elsewhere")
	b.WaitFor(`location.hash === "#/elsewhere"`, "the hash")

	b.Click(TestID("throw"))
	b.WaitFor("true", "a round trip") // the exception's event is in
	shot := filepath.Join(t.TempDir(), "shots", "page.png")
	b.Screenshot(shot)
	if png, err := os.ReadFile(shot); err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Errorf("screenshot: %v, %d bytes", err, len(png))
	}
	waitPageError(t, b, "deliberate")
}

func waitPageError(t *testing.T, b *Browser, want string) {
	t.Helper()
	b.waitUntil("the page error", func(_ context.Context) (bool, string) {
		errs := b.PageErrors()
		return len(errs) == 1 && strings.Contains(errs[0], want), fmt.Sprintf("page errors %q", errs)
	})
}
