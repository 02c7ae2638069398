package webui

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// The page is plain HTML, CSS and JavaScript modules, embedded so the binary
// serves it with nothing to build and nothing fetched from elsewhere.
//
//go:embed static
var staticFiles embed.FS

// assets is static/ itself, so /static/app.css is assets' app.css.
var assets = func() fs.FS {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic("webui: embedded static/ missing: " + err.Error()) // a build error, not input
	}
	return sub
}()

// contentSecurityPolicy lets the page load only what this server serves: a
// slip that referenced a CDN fails in every browser test, not just offline.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

func (s *server) index(w http.ResponseWriter, r *http.Request) {
	body, err := fs.ReadFile(assets, "index.html")
	if err != nil {
		writeError(w, http.StatusInternalServerError, "webui: reading the embedded page: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(body)
}

// static serves the assets under /static/, without directory listings. They
// are revalidated on every load (no-cache) so a new binary's page is never
// mixed with an old one's scripts.
func (s *server) static() http.Handler {
	files := http.StripPrefix("/static/", http.FileServerFS(assets))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			writeError(w, http.StatusNotFound, "webui: no file at "+r.URL.Path)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}
