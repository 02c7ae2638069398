// Package webui is weir's web UI: a single page that shows the runner's
// jobs as they run, and the JSON API it reads. Everything it serves is in
// the binary (embedded HTML, CSS and JavaScript modules; no build step, no
// CDN), so `weir serve` needs nothing beside it.
//
// The data is package jobview's: a Backend (the runner) hands out
// jobview.Summary rows and jobview.Job samples, and carries out cancel, drain
// and savepoint. The handler only encodes and routes; the figures are the
// runner's, so the UI, the CLI and the metrics exporters never disagree.
//
// Serving it, as `weir serve` would:
//
//	mux := http.NewServeMux()
//	webui.Register(mux, backend)   // /, /static/, /api/...
//	mux.Handle("/metrics", metricsHandler)
//	srv := &http.Server{Addr: addr, Handler: mux}
//	go srv.ListenAndServe()
//	...
//	srv.Shutdown(ctx)              // the page's polls are short requests
//
// or webui.Handler(backend) for a mux of its own. Register documents the
// routes; a Backend's error wrapping ErrNotFound answers 404, ErrConflict
// 409, any other 500, each as {"error": "..."}. A panic in a handler answers
// 500 and is logged; it never takes the process down.
//
// The page's loop: it routes on the location's hash (#/ the job list,
// #/jobs/<id> one job) and polls the API about once a second with fetch,
// one request at a time. The job list polls while it is shown. A job page
// polls until it has seen the job terminal (DONE, FAILED, CANCELLED,
// DRAINED, UPDATED), reads once more for the final figures, and stops. An
// action's button POSTs, shows the answer beside the buttons and refreshes
// at once.
//
// The job page shows, from a jobview.Job: the header with the state and the
// actions; the stage graph, laid out in the page (layout.js: longest-path
// layers, barycenter ordering) and coloured by busy and backpressured
// ratios as Flink's is; subtasks; Kafka partitions and alignment groups;
// checkpoints, each expandable to its subtasks; late data; workers; user
// metrics; and the last 200 messages.
//
// Tests find elements by data-testid: testids.go lists every one with what
// it marks and its data-* attributes. Package webui/uitest drives the page in
// headless Chromium (internal/tools/chromium.sh installs it; `make ui-test`
// runs the browser tests and fails, rather than skips, without it).
package webui
