package webui

import (
	"context"
	"net/http"
	"strings"

	"github.com/weir-runner/weir/jobview"
)

// Handler returns the UI and its API for b on a mux of its own. Use Register
// instead to serve them next to other routes.
func Handler(b Backend) http.Handler {
	mux := http.NewServeMux()
	Register(mux, b)
	return mux
}

// Register adds the UI's routes to mux. It claims only these patterns, so a
// caller may add others (/metrics, /debug/pprof/, even "/") beside them:
//
//	GET  /{$}                      the page
//	GET  /static/                  its CSS and JavaScript
//	GET  /api/jobs                 []jobview.Summary
//	GET  /api/jobs/{id}            jobview.Job
//	POST /api/jobs/{id}/cancel     {"ok":true}
//	POST /api/jobs/{id}/drain      {"ok":true}
//	POST /api/jobs/{id}/savepoint  {"ok":true,"location":"..."}
//	     /api/                     anything else: a JSON 404
//
// A wrong method on a known path is a JSON 405 with an Allow header. Every
// handler recovers its panics into a 500. Register panics, as ServeMux.Handle
// does, if mux already has a conflicting pattern.
func Register(mux *http.ServeMux, b Backend) {
	s := &server{b: b}
	route(mux, "GET", "/{$}", s.index)
	route(mux, "GET", "/static/", s.static().ServeHTTP)
	route(mux, "GET", "/api/jobs", s.jobs)
	route(mux, "GET", "/api/jobs/{id}", s.job)
	route(mux, "POST", "/api/jobs/{id}/cancel", s.action(func(ctx context.Context, id string) (string, error) {
		return "", b.Cancel(ctx, id)
	}))
	route(mux, "POST", "/api/jobs/{id}/drain", s.action(func(ctx context.Context, id string) (string, error) {
		return "", b.Drain(ctx, id)
	}))
	route(mux, "POST", "/api/jobs/{id}/savepoint", s.action(b.Savepoint))
	mux.Handle("/api/", recovering(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "webui: no API at "+r.URL.Path)
	})))
}

// route registers h for method on path, and for every other method a JSON
// 405: ServeMux's own 405 is plain text, which the page could not show.
func route(mux *http.ServeMux, method, path string, h http.HandlerFunc) {
	mux.Handle(method+" "+path, recovering(h))
	allow := method
	if method == "GET" {
		allow = "GET, HEAD"
	}
	mux.Handle(path, recovering(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed,
			"webui: "+r.Method+" not allowed on "+r.URL.Path+"; use "+strings.Split(allow, ",")[0])
	})))
}

type server struct {
	b Backend
}

func (s *server) jobs(w http.ResponseWriter, r *http.Request) {
	jobs := s.b.Jobs()
	if jobs == nil {
		jobs = []jobview.Summary{} // [] and not null: the page iterates it
	}
	writeJSON(w, http.StatusOK, jobs)
}

func (s *server) job(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	job, ok := s.b.Job(id)
	if !ok {
		writeError(w, http.StatusNotFound, "webui: no job "+id)
		return
	}
	writeJSON(w, http.StatusOK, job)
}

// actionResult is the answer to a successful POST.
type actionResult struct {
	OK       bool   `json:"ok"`
	Location string `json:"location,omitempty"` // a savepoint's
}

func (s *server) action(do func(ctx context.Context, id string) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		loc, err := do(r.Context(), r.PathValue("id"))
		if err != nil {
			writeError(w, statusOf(err), err.Error())
			return
		}
		writeJSON(w, http.StatusOK, actionResult{OK: true, Location: loc})
	}
}
