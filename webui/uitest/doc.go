// Package uitest drives weir's web UI in a real, headless Chromium, for
// tests in any package (webui's own, and end-to-end tests that start weir
// serve).
//
// A test's loop:
//
//	b := uitest.New(t)                       // skips if there is no Chromium
//	b.Navigate(srv.URL + "/")
//	b.WaitVisible(uitest.TestID("job-row", "data-job-id", id))
//	b.Click(uitest.TestID("job-link"))
//	b.WaitText(uitest.TestID("job-state"), uitest.Equals("RUNNING"))
//	b.Screenshot("docs/ui/job.png")
//
// The browser belongs to the test: New starts it and registers its stop
// with t.Cleanup, which closes it, waits for the process to exit and
// removes its profile directory. Every helper waits for at most the
// browser's timeout (30 s by default: generous, since a loaded machine is
// slow and a wait only ends early) and fails the test with what it was
// waiting for. Helpers read the page with one JavaScript evaluation each, so
// a page that redraws between polls never leaves a helper with a stale node.
//
// Uncaught exceptions and console.error calls of the page fail the test when
// the browser stops (see AllowPageErrors): a broken script otherwise shows up
// only as a wait that times out.
//
// Chromium is found by Chromium (see there): $WEIR_CHROMIUM, else
// /usr/bin/chromium, which internal/tools/chromium.sh installs. Without
// one the test is skipped, unless WEIR_REQUIRE_CHROMIUM=1, as `make ui-test`
// sets, makes it fail.
package uitest
