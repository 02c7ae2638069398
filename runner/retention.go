package runner

// A long-lived server forgets finished jobs: each keeps its pipeline, up
// to maxMessages messages and its metrics, and a server that runs jobs for
// weeks would hold every one. A job is forgotten once it has been
// terminal for longer than ServerOptions.JobRetention, as Flink's
// JobManager forgets archived jobs after jobstore.expiration-time (one
// hour by default, which weir serve copies).
//
// Pruning is lazy: every lookup of the registry (Job, Jobs, and so every
// RPC that names a job or lists them, and Prepare) first drops what has
// expired, so what a client sees follows the rule exactly and no
// goroutine or timer is needed. An RPC that found the job before keeps
// it: a stream following a job ends after its terminal state, which comes
// before the job can expire.

import (
	"slices"
	"time"
)

// clock reads the time pruning goes by: s.now in tests, else the wall
// clock. Job.Ended reads the wall clock, so tests move s.now from there.
func (s *Server) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// pruneJobsLocked forgets the jobs that have been terminal for longer than
// the retention. Zero retention keeps every job.
func (s *Server) pruneJobsLocked() {
	keep := s.opts.JobRetention
	if keep <= 0 {
		return
	}
	now := s.clock()
	pruned := false
	for id, j := range s.mu.jobs {
		if end := j.Ended(); !end.IsZero() && now.Sub(end) > keep {
			delete(s.mu.jobs, id)
			pruned = true
		}
	}
	if pruned {
		s.mu.order = slices.DeleteFunc(s.mu.order, func(id JobID) bool { return s.mu.jobs[id] == nil })
	}
}
