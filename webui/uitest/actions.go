package uitest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// TestID returns the CSS selector of the elements whose data-testid is id
// and that have each attribute of attrs, given as name, value pairs:
// TestID("stage-node", "data-stage-name", "Read") is
// [data-testid="stage-node"][data-stage-name="Read"]. Join two with a space
// for a descendant.
func TestID(id string, attrs ...string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `[data-testid="%s"]`, cssEscape(id))
	for i := 0; i+1 < len(attrs); i += 2 {
		fmt.Fprintf(&sb, `[%s="%s"]`, attrs[i], cssEscape(attrs[i+1]))
	}
	return sb.String()
}

func cssEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}

// Navigate loads url and waits for its load event.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	b.do("navigating to "+url, chromedp.Navigate(url))
}

// SetHash moves the page to #hash without reloading it, as a click on an
// in-page link does.
func (b *Browser) SetHash(hash string) {
	b.t.Helper()
	Eval[any](b, "location.hash = "+jsString(hash))
}

// WaitVisible waits until the first element sel matches is visible.
func (b *Browser) WaitVisible(sel string) {
	b.t.Helper()
	b.do("waiting for "+sel+" to be visible", chromedp.WaitVisible(chromedp.CSS(sel)))
}

// WaitGone waits until no element matches sel.
func (b *Browser) WaitGone(sel string) {
	b.t.Helper()
	b.WaitFor(fmt.Sprintf("document.querySelector(%s) === null", jsString(sel)), "no "+sel)
}

// WaitFor waits until the JavaScript expression is truthy; what names it
// in the failure.
func (b *Browser) WaitFor(expr, what string) {
	b.t.Helper()
	b.do("waiting for "+what, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(b.timeout)))
}

// WaitCount waits until exactly n elements match sel.
func (b *Browser) WaitCount(sel string, n int) {
	b.t.Helper()
	expr := fmt.Sprintf("document.querySelectorAll(%s).length", jsString(sel))
	b.waitUntil(fmt.Sprintf("%d of %s", n, sel), func(ctx context.Context) (bool, string) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
		if err != nil {
			return false, err.Error()
		}
		return got == n, fmt.Sprintf("%d of them", got)
	})
}

// Count returns how many elements match sel now.
func (b *Browser) Count(sel string) int {
	b.t.Helper()
	return Eval[int](b, fmt.Sprintf("document.querySelectorAll(%s).length", jsString(sel)))
}

// Text waits for sel and returns the text of its first match, trimmed.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	b.WaitFor(fmt.Sprintf("document.querySelector(%s) !== null", jsString(sel)), sel)
	return strings.TrimSpace(Eval[string](b, fmt.Sprintf("document.querySelector(%s)?.textContent ?? ''", jsString(sel))))
}

// Texts returns the trimmed texts of every match of sel now, in document
// order.
func (b *Browser) Texts(sel string) []string {
	b.t.Helper()
	return Eval[[]string](b, fmt.Sprintf(
		"[...document.querySelectorAll(%s)].map((e) => e.textContent.trim())", jsString(sel)))
}

// Attrs returns attribute name of every match of sel now ("" where absent).
func (b *Browser) Attrs(sel, name string) []string {
	b.t.Helper()
	return Eval[[]string](b, fmt.Sprintf(
		"[...document.querySelectorAll(%s)].map((e) => e.getAttribute(%s) ?? '')", jsString(sel), jsString(name)))
}

// WaitText polls the text of sel's first match until ok accepts it, and
// returns it. On timeout the failure shows the last text seen.
func (b *Browser) WaitText(sel string, ok Cond) string {
	b.t.Helper()
	expr := fmt.Sprintf("document.querySelector(%s)?.textContent.trim() ?? null", jsString(sel))
	var text string
	b.waitUntil(fmt.Sprintf("%s to be %s", sel, ok.what), func(ctx context.Context) (bool, string) {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[*string](expr))
		switch {
		case err != nil:
			return false, err.Error()
		case v == nil:
			return false, "no such element"
		}
		text = *v
		return ok.fn(text), fmt.Sprintf("still %q", text)
	})
	return text
}

// waitUntil calls check every 50ms until it returns true, and fails the
// test with check's last word on the browser's timeout. An error of one
// evaluation (the page between two scripts, say) is only a reason to look
// again.
func (b *Browser) waitUntil(what string, check func(ctx context.Context) (bool, string)) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done, last := check(ctx)
		if done {
			return
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("uitest: waiting for %s: %s after %v", what, last, b.timeout)
		case <-tick.C:
		}
	}
}

// Cond is a test of an element's text, for WaitText.
type Cond struct {
	what string
	fn   func(string) bool
}

// Equals accepts exactly want.
func Equals(want string) Cond {
	return Cond{fmt.Sprintf("%q", want), func(s string) bool { return s == want }}
}

// Contains accepts any text with sub in it.
func Contains(sub string) Cond {
	return Cond{fmt.Sprintf("containing %q", sub), func(s string) bool { return strings.Contains(s, sub) }}
}

// Not accepts what c refuses.
func Not(c Cond) Cond {
	return Cond{"not " + c.what, func(s string) bool { return !c.fn(s) }}
}

// Func accepts what fn accepts; what describes it in a failure.
func Func(what string, fn func(string) bool) Cond { return Cond{what, fn} }

// Click waits until sel's first match is visible and clicks its centre with
// the mouse, as a person would.
func (b *Browser) Click(sel string) {
	b.t.Helper()
	b.do("clicking "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// Screenshot saves a PNG of the whole page (not only the window) to path,
// making its directory.
func (b *Browser) Screenshot(path string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("uitest: screenshot for %s: %v", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatalf("uitest: screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("uitest: screenshot: %v", err)
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its value
// into T.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("uitest: evaluating %s: %v", expr, err)
	}
	return v
}

// WaitEnabled waits until sel's first match is present and not disabled.
func (b *Browser) WaitEnabled(sel string) {
	b.t.Helper()
	b.WaitFor(fmt.Sprintf("(() => { const e = document.querySelector(%s); return e !== null && !e.disabled; })()", jsString(sel)),
		sel+" to be enabled")
}
