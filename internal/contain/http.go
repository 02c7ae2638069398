package contain

import (
	"net/http"
)

// HTTP recovers a panic in h: on hears of it (to log it with its stack;
// net/http alone would log it to the server's ErrorLog and drop the
// connection without an answer). A request whose response has not begun
// answers 500; one whose response has begun is aborted, so the client
// sees it cut short rather than complete. http.ErrAbortHandler, a
// handler's own way to abort, passes through.
func HTTP(h http.Handler, on func(r *http.Request, p *PanicError)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := &writeWatcher{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			if on != nil {
				on(r, Recovered(v))
			}
			if ww.wrote {
				panic(http.ErrAbortHandler)
			}
			http.Error(w, "weir: internal error (a panic, logged by the server)", http.StatusInternalServerError)
		}()
		h.ServeHTTP(ww, r)
	})
}

// writeWatcher notes whether a response has begun. It forwards Flush and
// unwraps (for http.ResponseController), so handlers that stream keep
// the capabilities of the writer it wraps.
type writeWatcher struct {
	http.ResponseWriter
	wrote bool
}

func (w *writeWatcher) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *writeWatcher) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *writeWatcher) Flush() {
	w.wrote = true
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *writeWatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }
