package uitest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser is one headless Chromium with one tab, owned by one test. Its
// methods are to be called from the test's goroutine.
type Browser struct {
	t       testing.TB
	ctx     context.Context // the tab's; actions derive their timeouts from it
	timeout time.Duration

	mu struct {
		sync.Mutex
		pageErrors []string // guarded by mu: written by the console reader
	}
}

type options struct {
	timeout         time.Duration
	width, height   int
	allowPageErrors bool
}

// Option changes how New starts the browser.
type Option func(*options)

// WithTimeout sets how long each helper waits before it fails the test.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithWindowSize sets the window's size in CSS pixels; screenshots are this
// wide (and as tall as the page).
func WithWindowSize(width, height int) Option {
	return func(o *options) { o.width, o.height = width, height }
}

// AllowPageErrors keeps the page's uncaught exceptions and console errors
// from failing the test; PageErrors still returns them.
func AllowPageErrors() Option { return func(o *options) { o.allowPageErrors = true } }

// New starts Chromium (see Chromium: it may skip the test) and returns its
// tab. It is stopped by t.Cleanup.
func New(t testing.TB, opts ...Option) *Browser {
	t.Helper()
	o := options{timeout: 30 * time.Second, width: 1440, height: 900}
	for _, opt := range opts {
		opt(&o)
	}
	path := Chromium(t)

	flags := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		// Root in a container: Chromium's sandbox needs user namespaces
		// it does not get there, and refuses to start as root with it.
		chromedp.NoSandbox,
		chromedp.Flag("headless", "new"),
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), // /dev/shm is small in containers
		chromedp.WindowSize(o.width, o.height),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), flags...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	b := &Browser{t: t, ctx: ctx, timeout: o.timeout}

	// The first action starts the browser and must not carry a timeout
	// (it would bound the browser's life), so it is an empty one.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("uitest: starting %s: %v", path, err)
	}
	readerDone := make(chan struct{})
	messages := chromedp.Console(ctx)
	go func() {
		defer close(readerDone)
		for m, err := range messages {
			if err != nil {
				return // the tab's context ended
			}
			// Network errors (a 404 the page expects) are the page's
			// business; exceptions and console.error are bugs.
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") {
				b.mu.Lock()
				b.mu.pageErrors = append(b.mu.pageErrors, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()

	t.Cleanup(func() {
		// Close the browser gracefully, bounded; then cancel the
		// allocator, which waits for the process and removes its
		// profile directory; then the console reader has ended.
		closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := chromedp.Cancel(closeCtx); err != nil {
			t.Logf("uitest: closing the browser: %v", err)
		}
		cancel()
		cancelTab()
		cancelAlloc()
		<-readerDone
		if errs := b.PageErrors(); len(errs) > 0 && !o.allowPageErrors {
			t.Errorf("uitest: the page reported %d error(s):\n%s", len(errs), joinLines(errs))
		}
	})
	return b
}

// PageErrors returns the page's uncaught exceptions and console errors so
// far.
func (b *Browser) PageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.mu.pageErrors...)
}

// Context returns the tab's context, for chromedp actions the helpers lack.
// Derive a timeout from it for each call.
func (b *Browser) Context() context.Context { return b.ctx }

// do runs steps with the browser's timeout, failing the test with what
// was being done.
func (b *Browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("uitest: %s: %v", what, err)
	}
}

func joinLines(lines []string) string {
	s := ""
	for _, l := range lines {
		s += "\t" + l + "\n"
	}
	return s
}
