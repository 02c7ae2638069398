package fnapi

import (
	"fmt"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
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
