package executor

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// spreadWatch watches the watermark spread between the producers feeding
// one node: the gap between the furthest and the furthest-behind input.
// A join whose one side is being replayed alone, or a backfill of one
// source, shows here first: the node buffers the fast side's state until
// the slow side catches up. It warns once each time the spread passes the
// threshold, and re-arms when the spread falls below half of it. Every
// subtask of the node shares one watch; the node's spread is the largest
// its subtasks last saw, so one subtask lagging behind another does not
// re-arm it.
type spreadWatch struct {
	node      int // index in the graph, for warn
	name      string
	threshold mtime.Time // milliseconds
	warn      func(node int, msg string)

	mu      sync.Mutex
	armed   bool
	spreads []mtime.Time // the last spread each subtask saw
}

func newSpreadWatch(node int, name string, subtasks int, threshold time.Duration, warn func(int, string)) *spreadWatch {
	if threshold <= 0 || warn == nil {
		return nil
	}
	return &spreadWatch{node: node, name: name, threshold: mtime.Time(threshold.Milliseconds()), warn: warn, armed: true,
		spreads: make([]mtime.Time, subtasks)}
}

// observe takes the watermark of each producer that has one: a producer
// still at the start of time has not said where it is, and one that ended
// is no longer behind anything.
func (s *spreadWatch) observe(sub int, wms []mtime.Time) {
	lo, hi, n := mtime.MaxTimestamp, mtime.MinTimestamp, 0
	for _, wm := range wms {
		if wm <= mtime.MinTimestamp || wm >= mtime.MaxTimestamp {
			continue
		}
		lo, hi, n = min(lo, wm), max(hi, wm), n+1
	}
	if n < 2 {
		return
	}
	s.mu.Lock()
	s.spreads[sub] = hi - lo
	spread := slices.Max(s.spreads)
	fire := s.armed && spread > s.threshold
	switch {
	case fire:
		s.armed = false
	case spread < s.threshold/2:
		s.armed = true
	}
	s.mu.Unlock()
	if fire {
		s.warn(s.node, fmt.Sprintf("%s: its inputs' watermarks are %v apart (slowest at %s, fastest at %s), more than %v: "+
			"one side is far ahead, as when a join is replayed or backfilled on one side only, and its state grows until "+
			"the other catches up", s.name, time.Duration(spread)*time.Millisecond, fmtTime(lo), fmtTime(hi),
			time.Duration(s.threshold)*time.Millisecond))
	}
}

// last returns the spread subtask sub last saw between its producers.
func (s *spreadWatch) last(sub int) mtime.Time {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spreads[sub]
}
