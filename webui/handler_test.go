package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-runner/weir/jobview"
)

// stubBackend answers from fixed data; each action's error is set per test.
type stubBackend struct {
	jobs      []jobview.Summary
	job       map[string]jobview.Job
	actionErr error
	location  string
	panicMsg  string // if set, every call panics with it
	calls     []string
}

func (b *stubBackend) maybePanic() {
	if b.panicMsg != "" {
		panic(b.panicMsg)
	}
}

func (b *stubBackend) Jobs() []jobview.Summary { b.maybePanic(); return b.jobs }

func (b *stubBackend) Job(id string) (jobview.Job, bool) {
	b.maybePanic()
	j, ok := b.job[id]
	return j, ok
}

func (b *stubBackend) Cancel(_ context.Context, id string) error {
	b.maybePanic()
	b.calls = append(b.calls, "cancel "+id)
	return b.actionErr
}

func (b *stubBackend) Drain(_ context.Context, id string) error {
	b.maybePanic()
	b.calls = append(b.calls, "drain "+id)
	return b.actionErr
}

func (b *stubBackend) Savepoint(_ context.Context, id string) (string, error) {
	b.maybePanic()
	b.calls = append(b.calls, "savepoint "+id)
	if b.actionErr != nil {
		return "", b.actionErr
	}
	return b.location, nil
}

func sampleBackend() *stubBackend {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sum := jobview.Summary{ID: "job-1", Name: "clicks", State: "RUNNING", Start: start, Seconds: 42}
	job := jobview.Job{
		Summary:   sum,
		SampledAt: start.Add(42 * time.Second),
		Stages: []jobview.Stage{
			{Index: 0, Name: "Read", Kind: "source", Parallelism: 2, OutputWatermark: jobview.MinWatermark},
			{Index: 1, Name: "Count", Kind: "gbk", Parallelism: 4, OutputWatermark: 1764590400000},
		},
		Edges: []jobview.Edge{{From: 0, To: 1, Partition: "hash"}},
	}
	odd := job
	odd.ID, odd.Name = "a b/c", "odd id"
	return &stubBackend{
		jobs:     []jobview.Summary{sum},
		job:      map[string]jobview.Job{"job-1": job, "a b/c": odd},
		location: "/state/savepoints/sp-7",
	}
}

type want struct {
	status int
	allow  string
	// json: the body decodes as JSON and, re-encoded with sorted keys, has
	// each of these substrings.
	json []string
	// text: the body, as bytes, has each of these substrings.
	text  []string
	ctype string
	calls []string
}

func TestHandler(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		setup  func(b *stubBackend)
		want   want
	}{
		{name: "job list", method: "GET", path: "/api/jobs",
			want: want{status: 200, ctype: "application/json", json: []string{`"id":"job-1"`, `"state":"RUNNING"`, `"seconds":42`}}},
		{name: "empty job list is [] not null", method: "GET", path: "/api/jobs", setup: func(b *stubBackend) { b.jobs = nil },
			want: want{status: 200, text: []string{"[]"}}},
		{name: "one job", method: "GET", path: "/api/jobs/job-1",
			want: want{status: 200, ctype: "application/json", json: []string{
				`"name":"clicks"`, `"outputWatermark":-9223372036854775`, `"partition":"hash"`, `"stages":[`}}},
		{name: "job id escaped in the path", method: "GET", path: "/api/jobs/a%20b%2Fc",
			want: want{status: 200, json: []string{`"name":"odd id"`}}},
		{name: "unknown job", method: "GET", path: "/api/jobs/nope",
			want: want{status: 404, json: []string{`"error":"webui: no job nope"`}}},
		{name: "head of the job list", method: "HEAD", path: "/api/jobs", want: want{status: 200}},
		{name: "unknown api path", method: "GET", path: "/api/nothing/here",
			want: want{status: 404, json: []string{`"error":"webui: no API at /api/nothing/here"`}}},
		{name: "unknown action", method: "POST", path: "/api/jobs/job-1/restart",
			want: want{status: 404, json: []string{`"error"`}}},

		{name: "cancel", method: "POST", path: "/api/jobs/job-1/cancel",
			want: want{status: 200, json: []string{`{"ok":true}`}, calls: []string{"cancel job-1"}}},
		{name: "drain", method: "POST", path: "/api/jobs/job-1/drain",
			want: want{status: 200, json: []string{`{"ok":true}`}, calls: []string{"drain job-1"}}},
		{name: "savepoint returns its location", method: "POST", path: "/api/jobs/job-1/savepoint",
			want: want{status: 200, json: []string{`"location":"/state/savepoints/sp-7"`, `"ok":true`}, calls: []string{"savepoint job-1"}}},
		{name: "action on an unknown job", method: "POST", path: "/api/jobs/nope/drain",
			setup: func(b *stubBackend) { b.actionErr = fmt.Errorf("runner: job nope: %w", ErrNotFound) },
			want:  want{status: 404, json: []string{`"error":"runner: job nope: webui: no such job"`}, calls: []string{"drain nope"}}},
		{name: "action the state forbids", method: "POST", path: "/api/jobs/job-1/drain",
			setup: func(b *stubBackend) { b.actionErr = fmt.Errorf("runner: job-1 is DONE: %w", ErrConflict) },
			want:  want{status: 409, json: []string{`"error":"runner: job-1 is DONE`}, calls: []string{"drain job-1"}}},
		{name: "action failing otherwise", method: "POST", path: "/api/jobs/job-1/savepoint",
			setup: func(b *stubBackend) { b.actionErr = errors.New("checkpoint: disk full") },
			want:  want{status: 500, json: []string{`"error":"checkpoint: disk full"`}, calls: []string{"savepoint job-1"}}},

		{name: "GET on an action", method: "GET", path: "/api/jobs/job-1/cancel",
			want: want{status: 405, allow: "POST", json: []string{`"error":"webui: GET not allowed on /api/jobs/job-1/cancel; use POST"`}}},
		{name: "POST on the job list", method: "POST", path: "/api/jobs",
			want: want{status: 405, allow: "GET, HEAD", json: []string{`"error"`}}},
		{name: "DELETE on a job", method: "DELETE", path: "/api/jobs/job-1",
			want: want{status: 405, allow: "GET, HEAD"}},
		{name: "POST on the page", method: "POST", path: "/", want: want{status: 405, allow: "GET, HEAD"}},

		{name: "panic in the backend", method: "GET", path: "/api/jobs",
			setup: func(b *stubBackend) { b.panicMsg = "stage table corrupt" },
			want:  want{status: 500, json: []string{`"error":"webui: internal error serving GET /api/jobs: stage table corrupt"`}}},
		{name: "panic in an action", method: "POST", path: "/api/jobs/job-1/drain",
			setup: func(b *stubBackend) { b.panicMsg = "boom" },
			want:  want{status: 500, json: []string{`boom`}}},
		{name: "a sample JSON cannot encode", method: "GET", path: "/api/jobs/job-1",
			setup: func(b *stubBackend) {
				j := b.job["job-1"]
				j.Stages = append([]jobview.Stage(nil), j.Stages...)
				j.Stages[0].Rates.ElementsOutPerSecond = math.NaN()
				b.job["job-1"] = j
			},
			want: want{status: 500, json: []string{`"error":"webui: encoding the response: json: unsupported value: NaN"`}}},

		{name: "the page", method: "GET", path: "/",
			want: want{status: 200, ctype: "text/html", text: []string{`<script type="module" src="/static/js/app.js">`, `data-testid="poll-status"`}}},
		{name: "a script", method: "GET", path: "/static/js/graph.js",
			want: want{status: 200, ctype: "text/javascript", text: []string{"export class StageGraph"}}},
		{name: "the style sheet", method: "GET", path: "/static/app.css", want: want{status: 200, ctype: "text/css"}},
		{name: "no directory listing", method: "GET", path: "/static/js/", want: want{status: 404}},
		{name: "a missing asset", method: "GET", path: "/static/nope.js", want: want{status: 404}},
		{name: "nothing outside the routes", method: "GET", path: "/elsewhere", want: want{status: 404}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			captureLog(t)
			b := sampleBackend()
			if tt.setup != nil {
				tt.setup(b)
			}
			rec := httptest.NewRecorder()
			Handler(b).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			check(t, rec, tt.want)
			if fmt.Sprint(b.calls) != fmt.Sprint(tt.want.calls) {
				t.Errorf("backend calls = %q, want %q", b.calls, tt.want.calls)
			}
		})
	}
}

func check(t *testing.T, rec *httptest.ResponseRecorder, w want) {
	t.Helper()
	body := rec.Body.String()
	if rec.Code != w.status {
		t.Errorf("status = %d, want %d; body %s", rec.Code, w.status, body)
	}
	if got := rec.Header().Get("Allow"); got != w.allow {
		t.Errorf("Allow = %q, want %q", got, w.allow)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, w.ctype) {
		t.Errorf("Content-Type = %q, want %q", ct, w.ctype)
	}
	for _, s := range w.text {
		if !strings.Contains(body, s) {
			t.Errorf("body lacks %q:\n%s", s, body)
		}
	}
	if len(w.json) == 0 && !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		return
	}
	// Every API answer, errors and 405s included, is JSON: the page shows
	// its "error" field.
	var v any
	dec := json.NewDecoder(rec.Body)
	dec.UseNumber() // watermarks are past float64's exact integers
	if err := dec.Decode(&v); err != nil && err != io.EOF {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	canon, _ := json.Marshal(v)
	for _, s := range w.json {
		if !strings.Contains(string(canon), s) {
			t.Errorf("JSON lacks %s:\n%s", s, canon)
		}
	}
}

// TestErrorsAreJSON: an error of any route is {"error": "..."}, so the page
// can always show why.
func TestErrorsAreJSON(t *testing.T) {
	b := sampleBackend()
	b.actionErr = ErrConflict
	h := Handler(b)
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/jobs/nope"}, {"PUT", "/api/jobs"}, {"POST", "/api/jobs/job-1/cancel"}, {"GET", "/api/x"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(r.method, r.path, nil))
		var e errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
			t.Errorf("%s %s: %d %q is not a JSON error (%v)", r.method, r.path, rec.Code, rec.Body, err)
		}
	}
}

// TestPanicKeepsServing: after a handler panicked the same server answers
// the next request, over a real connection.
func TestPanicKeepsServing(t *testing.T) {
	logged := captureLog(t)
	b := sampleBackend()
	srv := httptest.NewServer(Handler(b))
	defer srv.Close()

	b.panicMsg = "first request panics"
	if code, body := get(t, srv.URL+"/api/jobs"); code != 500 || !strings.Contains(body, "first request panics") {
		t.Fatalf("panicking request: %d %s", code, body)
	}
	b.panicMsg = ""
	if code, body := get(t, srv.URL+"/api/jobs"); code != 200 || !strings.Contains(body, "job-1") {
		t.Fatalf("request after the panic: %d %s", code, body)
	}
	if log := logged.String(); !strings.Contains(log, "first request panics") || !strings.Contains(log, "stubBackend") {
		t.Errorf("the panic and its stack were not logged: %s", log)
	}
}

// captureLog sends slog's default logger to a buffer for the test, so the
// panics the tests cause do not fill the output, and can be checked.
func captureLog(t *testing.T) *syncBuffer {
	t.Helper()
	var buf syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines to write
// while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

// TestRegisterBesideOtherRoutes: the caller's own routes, including a
// catch-all "/", live on the same mux without a conflict.
func TestRegisterBesideOtherRoutes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "weir_up 1\n") })
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pprof") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "caller's fallback") })
	Register(mux, sampleBackend())

	for _, c := range []struct{ path, want string }{
		{"/metrics", "weir_up 1"},
		{"/debug/pprof/heap", "pprof"},
		{"/other", "caller's fallback"},
		{"/", "<!doctype html>"},
		{"/api/jobs", `"id":"job-1"`},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", c.path, nil))
		if !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("GET %s = %d %q, want %q in it", c.path, rec.Code, rec.Body, c.want)
		}
	}
}

// TestPageHeaders: the page may load only what this server serves.
func TestPageHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(sampleBackend()).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	rec = httptest.NewRecorder()
	Handler(sampleBackend()).ServeHTTP(rec, httptest.NewRequest("GET", "/api/jobs", nil))
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("API Cache-Control = %q, want no-store", cc)
	}
}
