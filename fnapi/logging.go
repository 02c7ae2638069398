package fnapi

import (
	"fmt"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/weir-runner/weir/internal/contain"
)

type loggingService struct {
	fnpb.UnimplementedBeamFnLoggingServer
	s *Server
}

func (l loggingService) Logging(stream fnpb.BeamFnLogging_LoggingServer) error {
	w, err := l.s.workerFor(stream.Context())
	if err != nil {
		return err
	}
	w.logs.opened()
	defer w.logs.closed()
	contain.At(contain.FnLogging, l.s.opts.JobID)
	for {
		batch, err := stream.Recv()
		if err != nil {
			return nil
		}
		for _, e := range batch.GetLogEntries() {
			w.logs.add(fmt.Sprintf("%s %s: %s", e.GetSeverity(), e.GetLogLocation(), e.GetMessage()))
			if w.onLog != nil {
				w.onLog(w.ID, e)
			}
		}
	}
}

// logRing keeps a worker's last lines for the job messages of a crash.
type logRing struct {
	mu   sync.Mutex
	buf  [32]string
	next int
	n    int
	open int           // logging streams open
	idle chan struct{} // closed when the last open stream ends
}

func (r *logRing) opened() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == 0 {
		r.idle = make(chan struct{})
	}
	r.open++
}

func (r *logRing) closed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open--
	if r.open == 0 {
		close(r.idle)
	}
}

// settled is closed once no logging stream is open.
func (r *logRing) settled() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return r.idle
}

func (r *logRing) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.n < len(r.buf) {
		r.n++
	}
}

func (r *logRing) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, r.n)
	for i := range r.n {
		out = append(out, r.buf[(r.next-r.n+i+len(r.buf))%len(r.buf)])
	}
	return out
}
