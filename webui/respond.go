package webui

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
)

// errorBody is the API's answer to anything that failed.
type errorBody struct {
	Error string `json:"error"`
}

// writeJSON encodes v before writing anything, so an encoding failure (a NaN
// in a sample, say) still becomes a clean 500 and never half a body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(errorBody{Error: "webui: encoding the response: " + err.Error()})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	// Samples change every second; a cached one would show a stale job.
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

// recovering turns a panic in h into a 500 with the panic's message, so one
// bad sample or backend bug costs one request, not the process (net/http
// would only recover it to close the connection, leaving the browser with
// nothing to show). The stack goes to the log.
//
// http.ErrAbortHandler is re-panicked: it is net/http's way to abort a
// response on purpose. Handlers here write their body in one call at the end,
// so a panic comes before anything was written and the 500 is well formed.
func recovering(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			slog.Error("webui: panic serving a request",
				"method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			writeError(w, http.StatusInternalServerError,
				fmt.Sprintf("webui: internal error serving %s %s: %v", r.Method, r.URL.Path, v))
		}()
		h.ServeHTTP(w, r)
	})
}
