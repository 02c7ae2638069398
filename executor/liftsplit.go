package executor

import "time"

// An SDF bundle can run for long: a source's bundle ends when its output
// reaches MaxBundleOutput or a split cuts it. If it precombines and its
// keys do not repeat, waiting for it to end before converting would leave
// most of the input precombined. So while a precombining SDF bundle runs,
// its progress is asked every splitAge; once its counts show the
// precombine not worth running (liftSwitch.running), the bundle is
// checkpointed, and the rest of its restriction runs as a new bundle,
// which converts. Outputs of either kind are the same accumulators, so
// cutting the bundle loses and repeats nothing. Where the combine may run
// unlifted (unlift.go), the same report decides that, and every bundle
// still precombining is checkpointed too, so that little runs twice.

// liftWatch is a running attempt's progress watch.
type liftWatch struct {
	asking  bool      // a progress request is out
	last    time.Time // when the last one was sent
	settled bool      // the counts showed the precombine worth its cost
}

// watchPrecombining asks the progress of precombining bundles not asked
// for splitAge.
func (r *sdfRun) watchPrecombining() {
	if r.s.Spec.Lift == nil {
		return
	}
	us := r.s.Spec.Unlift
	unlifted := us != nil && us.Producer && us.Switch.Unlifted()
	now := time.Now()
	for t := range r.running {
		w := &t.liftWatch
		if unlifted && t.use != liftUnlifted && !w.settled {
			// It will run again, unlifted: the sooner it stops, the less
			// is done twice.
			t.liftStop = true
			continue
		}
		if t.use != liftPrecombine || t.inst == "" || w.asking || w.settled || t.liftStop ||
			now.Sub(t.started) < splitAge || now.Sub(w.last) < splitAge {
			continue
		}
		w.asking, w.last = true, now
		wk, inst := t.worker, t.inst
		r.goContained("progress of a precombining bundle", func() {
			p, err := wk.Progress(r.ctx, inst)
			r.send(sdfEvent{task: t, inst: inst, progressDone: true, progress: p, err: err})
		})
	}
}

// progressAnswered judges a precombining bundle by its counts so far.
func (r *sdfRun) progressAnswered(t *sdfTask, ev sdfEvent) {
	t.liftWatch.asking = false
	if ev.inst != t.inst || ev.err != nil || !r.running[t] {
		return // another attempt, or gone: the next report tells
	}
	in, out := r.s.Spec.Lift.counts(ev.progress.GetMonitoringInfos())
	if r.s.lift.running(in, out) {
		t.liftStop = true
		if us := r.s.Spec.Unlift; us != nil && us.Producer {
			us.Switch.decide(in, out, true)
		}
		return
	}
	if in >= liftRunningEvidence {
		t.liftWatch.settled = true
	}
}

// stopPrecombining checkpoints a bundle found not worth precombining, so
// the rest of its work runs as a new bundle that converts. It reports
// whether it asked.
func (r *sdfRun) stopPrecombining() bool {
	for t := range r.running {
		if !t.liftStop || t.inst == "" {
			continue
		}
		t.liftStop = false
		t.liftWatch.settled = true // asked once; a declined split leaves it be
		r.askSplit(t, 0)
		return true
	}
	return false
}
