package telemetry

import (
	"context"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weir-runner/weir/jobview"
)

// register makes every instrument of the Catalog and one callback that
// observes them all from the jobs' samples.
func register(m metric.Meter, jobs func() []jobview.Job) error {
	insts := make(map[string]metric.Float64Observable, len(Catalog))
	all := make([]metric.Observable, 0, len(Catalog))
	for _, c := range Catalog {
		var inst metric.Float64Observable
		var err error
		switch c.Kind {
		case kindCounter:
			inst, err = m.Float64ObservableCounter(c.Name, metric.WithUnit(c.Unit), metric.WithDescription(c.Description))
		case kindUpDown:
			inst, err = m.Float64ObservableUpDownCounter(c.Name, metric.WithUnit(c.Unit), metric.WithDescription(c.Description))
		default:
			inst, err = m.Float64ObservableGauge(c.Name, metric.WithUnit(c.Unit), metric.WithDescription(c.Description))
		}
		if err != nil {
			return fmt.Errorf("telemetry: instrument %s: %w", c.Name, err)
		}
		insts[c.Name] = inst
		all = append(all, inst)
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		obs := observer{o: o, insts: insts}
		views := jobs()
		obs.jobs(views)
		for i := range views {
			obs.job(&views[i])
		}
		return nil
	}, all...)
	if err != nil {
		return fmt.Errorf("telemetry: register callback: %w", err)
	}
	return nil
}

// observer writes one collection's observations.
type observer struct {
	o     metric.Observer
	insts map[string]metric.Float64Observable
}

func (ob observer) emit(name string, v float64, attrs ...attribute.KeyValue) {
	ob.o.ObserveFloat64(ob.insts[name], v, metric.WithAttributes(attrs...))
}

// watermark observes wm unless it is at the start or the end of time,
// which have no useful number.
func (ob observer) watermark(name string, wm int64, attrs ...attribute.KeyValue) {
	if wm > jobview.MinWatermark && wm < jobview.MaxWatermark {
		ob.emit(name, float64(wm), attrs...)
	}
}

func (ob observer) jobs(views []jobview.Job) {
	byState := map[string]int{}
	for _, v := range views {
		byState[v.State]++
	}
	for st, n := range byState {
		ob.emit("weir.jobs", float64(n), attribute.String("state", st))
	}
}

func (ob observer) job(v *jobview.Job) {
	job := []attribute.KeyValue{attribute.String("job", v.ID), attribute.String("job_name", v.Name)}
	for i := range v.Stages {
		ob.stage(job, &v.Stages[i])
	}
	ob.kafka(job, v)
	ob.checkpoints(job, v.Checkpoints)
	ob.late(job, v.Late)
	ob.emit("weir.sdk.workers", float64(v.Workers.Running), job...)
	ob.emit("weir.sdk.workers.lost", float64(v.Workers.Lost), job...)
	ob.emit("weir.bundle.retries", float64(v.Workers.BundleRetries), job...)
	ob.emit("weir.job.restarts", float64(v.Restarts), job...)
	ob.user(job, v.User)
}

var (
	dirIn, dirOut       = attribute.String("direction", "in"), attribute.String("direction", "out")
	dirInput, dirOutput = attribute.String("direction", "input"), attribute.String("direction", "output")
)

func with(base []attribute.KeyValue, more ...attribute.KeyValue) []attribute.KeyValue {
	return append(append(make([]attribute.KeyValue, 0, len(base)+len(more)), base...), more...)
}

func (ob observer) stage(job []attribute.KeyValue, s *jobview.Stage) {
	st := with(job, attribute.String("stage", s.Name))
	ob.watermark("weir.stage.watermark", s.InputWatermark, with(st, dirInput)...)
	ob.watermark("weir.stage.watermark", s.OutputWatermark, with(st, dirOutput)...)
	ob.emit("weir.stage.watermark.lag", s.WatermarkLag, st...)
	ob.emit("weir.stage.elements.rate", s.ElementsInPerSecond, with(st, dirIn)...)
	ob.emit("weir.stage.elements.rate", s.ElementsOutPerSecond, with(st, dirOut)...)
	if s.StateBytes >= 0 {
		ob.emit("weir.stage.state.size", float64(s.StateBytes), st...)
	}
	for i := range s.Subtasks {
		t := &s.Subtasks[i]
		a := with(st, attribute.Int("subtask", t.Index))
		ob.emit("weir.subtask.elements", float64(t.ElementsIn), with(a, dirIn)...)
		ob.emit("weir.subtask.elements", float64(t.ElementsOut), with(a, dirOut)...)
		ob.emit("weir.subtask.bytes", float64(t.BytesIn), with(a, dirIn)...)
		ob.emit("weir.subtask.bytes", float64(t.BytesOut), with(a, dirOut)...)
		ob.emit("weir.subtask.time", t.BusySeconds, with(a, attribute.String("state", "busy"))...)
		ob.emit("weir.subtask.time", t.IdleSeconds, with(a, attribute.String("state", "idle"))...)
		ob.emit("weir.subtask.time", t.BackpressuredSeconds, with(a, attribute.String("state", "backpressured"))...)
		ob.emit("weir.subtask.busy.ratio", t.Busy, a...)
		ob.emit("weir.subtask.idle.ratio", t.Idle, a...)
		ob.emit("weir.subtask.backpressured.ratio", t.Backpressured, a...)
		ob.emit("weir.subtask.queue.depth", float64(t.QueueDepth), a...)
		ob.emit("weir.subtask.queue.capacity", float64(t.QueueCapacity), a...)
		ob.watermark("weir.subtask.watermark", t.InputWatermark, with(a, dirInput)...)
		ob.watermark("weir.subtask.watermark", t.OutputWatermark, with(a, dirOutput)...)
		if t.Bundles > 0 {
			ob.emit("weir.subtask.bundles", float64(t.Bundles), a...)
			ob.emit("weir.subtask.bundle.duration", t.BundleSeconds, a...)
		}
	}
}

func (ob observer) kafka(job []attribute.KeyValue, v *jobview.Job) {
	for _, p := range v.Partitions {
		a := with(job, attribute.String("stage", p.Source), attribute.String("messaging.system", "kafka"),
			attribute.String("messaging.destination.name", p.Topic),
			attribute.String("messaging.destination.partition.id", strconv.Itoa(int(p.Partition))))
		ob.watermark("weir.source.watermark", p.Watermark, a...)
		if p.Watermark > jobview.MinWatermark && p.Watermark < jobview.MaxWatermark {
			ob.emit("weir.source.watermark.lag", jobview.Lag(v.SampledAt, p.Watermark), a...)
		}
		ob.emit("messaging.client.consumed.messages", float64(p.Consumed), a...)
		if p.Lag >= 0 {
			ob.emit("weir.kafka.consumer.lag", float64(p.Lag), a...)
			ob.emit("weir.kafka.consumer.lag.time", p.LagSeconds, a...)
		}
		ob.emit("weir.kafka.partition.paused", b2f(p.Paused), a...)
		ob.emit("weir.kafka.partition.idle", b2f(p.Idle), a...)
	}
	for _, g := range v.Alignment {
		a := with(job, attribute.String("group", g.Group))
		ob.emit("weir.alignment.spread", g.Spread, a...)
		ob.emit("weir.alignment.paused", float64(g.Paused), a...)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (ob observer) checkpoints(job []attribute.KeyValue, c jobview.Checkpoints) {
	if !c.Enabled {
		return
	}
	ob.emit("weir.checkpoint.completed", float64(c.Completed), job...)
	ob.emit("weir.checkpoint.failed", float64(c.Failed), job...)
	ob.emit("weir.checkpoint.in_progress", b2f(c.InProgress), job...)
	for _, h := range c.History { // newest first
		if h.Status != "completed" {
			continue
		}
		ob.emit("weir.checkpoint.duration", h.Seconds, job...)
		ob.emit("weir.checkpoint.size", float64(h.Bytes), job...)
		ob.emit("weir.checkpoint.in_flight.size", float64(h.InFlight), job...)
		ob.emit("weir.checkpoint.alignment.duration", h.AlignmentSeconds, job...)
		break
	}
}

func (ob observer) late(job []attribute.KeyValue, late []jobview.Late) {
	for _, l := range late {
		if l.InputSpread > 0 {
			ob.emit("weir.stage.input.spread", l.InputSpread, with(job, attribute.String("stage", l.Transform))...)
			continue
		}
		a := with(job, attribute.String("transform", l.Transform))
		if !l.Source {
			ob.emit("weir.late.dropped", float64(l.DroppedLate), with(a, attribute.String("reason", "late"))...)
			ob.emit("weir.late.dropped", float64(l.DroppedClosed), with(a, attribute.String("reason", "closed_window"))...)
		}
		if l.Arrivals > 0 {
			ob.emit("weir.arrival.delay", float64(l.ArrivalP50), with(a, attribute.String("quantile", "0.5"))...)
			ob.emit("weir.arrival.delay", float64(l.ArrivalP99), with(a, attribute.String("quantile", "0.99"))...)
			ob.emit("weir.arrival.delay", float64(l.ArrivalMax), with(a, attribute.String("quantile", "1"))...)
		}
	}
}

func (ob observer) user(job []attribute.KeyValue, us []jobview.UserMetric) {
	for _, u := range us {
		a := with(job, attribute.String("namespace", u.Namespace), attribute.String("name", u.Name),
			attribute.String("transform", u.Transform))
		switch u.Kind {
		case "counter":
			ob.emit("weir.user.counter", u.Value, a...)
		case "gauge":
			ob.emit("weir.user.gauge", u.Value, a...)
		case "distribution":
			ob.emit("weir.user.distribution.count", float64(u.Count), a...)
			ob.emit("weir.user.distribution.sum", u.Sum, a...)
			if u.Count > 0 {
				ob.emit("weir.user.distribution.min", u.Min, a...)
				ob.emit("weir.user.distribution.max", u.Max, a...)
			}
		}
	}
}
