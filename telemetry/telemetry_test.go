package telemetry

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/weir-runner/weir/jobview"
	"github.com/weir-runner/weir/telemetry/promtest"
)

// sampleJob is a job with one of everything the exporter reads.
func sampleJob(wm int64, lag int64) jobview.Job {
	now := time.UnixMilli(wm + 5000)
	sub := jobview.Subtask{Index: 0, Counts: jobview.Counts{ElementsIn: 10, ElementsOut: 20, BytesIn: 100, BytesOut: 200,
		Bundles: 3, BundleSeconds: 1.5, BusySeconds: 2, IdleSeconds: 1, BackpressuredSeconds: 0.5},
		Ratios: jobview.Ratios{Busy: 0.5, Idle: 0.25, Backpressured: 0.25}, InputWatermark: wm, OutputWatermark: wm,
		QueueDepth: 3, QueueCapacity: 16}
	st := jobview.Stage{Index: 0, Name: "s1(Read)", Parallelism: 1, StateBytes: 4096, Subtasks: []jobview.Subtask{sub}}
	st.Rollup(now)
	return jobview.Job{
		Summary:   jobview.Summary{ID: "job-1", Name: "wc", State: "RUNNING"},
		SampledAt: now,
		Stages:    []jobview.Stage{st, {Index: 1, Name: "s2(Sink)", StateBytes: -1, InputWatermark: jobview.MinWatermark, OutputWatermark: jobview.MinWatermark}},
		Partitions: []jobview.Partition{{Source: "s1(Read)", Topic: "in", Partition: 2, Watermark: wm, Next: 7, Consumed: 7,
			Lag: lag, LagSeconds: 1.5, Paused: true}},
		Alignment: []jobview.Alignment{{Group: "g", Spread: 2, Paused: 1}},
		Checkpoints: jobview.Checkpoints{Enabled: true, Completed: 4, Failed: 1, History: []jobview.Checkpoint{
			{ID: 6, Status: "in progress"}, {ID: 5, Status: "completed", Seconds: 0.25, Bytes: 999, InFlight: 9, AlignmentSeconds: 0.1}}},
		Late: []jobview.Late{{Transform: "gbk", DroppedLate: 2, DroppedClosed: 1, Arrivals: 5, ArrivalP50: 10, ArrivalP99: 90, ArrivalMax: 100},
			{Transform: "s3(Join)", InputSpread: 60}},
		Workers: jobview.Workers{Running: 1, Lost: 2, BundleRetries: 2},
		User: []jobview.UserMetric{{Namespace: "main", Name: "words", Transform: "count", Kind: "counter", Value: 42},
			{Namespace: "main", Name: "len", Transform: "count", Kind: "distribution", Count: 2, Sum: 7, Min: 3, Max: 4}},
	}
}

// TestPrometheusExposition scrapes the handler with Prometheus's parser
// and finds each area's figures under their exported names and labels,
// and sees them move between scrapes.
func TestPrometheusExposition(t *testing.T) {
	var mu sync.Mutex
	job := sampleJob(1_000_000, 50)
	url := serveJobs(t, func() []jobview.Job {
		mu.Lock()
		defer mu.Unlock()
		return []jobview.Job{job}
	})
	fams, err := promtest.Scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	sub := map[string]string{"job": "job-1", "job_name": "wc", "stage": "s1(Read)", "subtask": "0"}
	part := map[string]string{"job": "job-1", "messaging_destination_name": "in", "messaging_destination_partition_id": "2"}
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"weir_subtask_elements_total", with2(sub, "direction", "out"), 20},
		{"weir_subtask_bytes_total", with2(sub, "direction", "in"), 100},
		{"weir_subtask_time_seconds_total", with2(sub, "state", "backpressured"), 0.5},
		{"weir_subtask_backpressured_ratio", sub, 0.25},
		{"weir_subtask_busy_ratio", sub, 0.5},
		{"weir_subtask_queue_depth", sub, 3},
		{"weir_subtask_watermark_milliseconds", with2(sub, "direction", "output"), 1_000_000},
		{"weir_subtask_bundles_total", sub, 3},
		{"weir_stage_watermark_lag_seconds", map[string]string{"stage": "s1(Read)"}, 5},
		{"weir_stage_state_size_bytes", map[string]string{"stage": "s1(Read)"}, 4096},
		{"weir_stage_input_spread_seconds", map[string]string{"stage": "s3(Join)"}, 60},
		{"weir_kafka_consumer_lag", part, 50},
		{"weir_kafka_consumer_lag_time_seconds", part, 1.5},
		{"weir_kafka_partition_paused", part, 1},
		{"weir_source_watermark_lag_seconds", part, 5},
		{"messaging_client_consumed_messages_total", part, 7},
		{"weir_alignment_spread_seconds", map[string]string{"group": "g"}, 2},
		{"weir_checkpoint_completed_total", map[string]string{"job": "job-1"}, 4},
		{"weir_checkpoint_failed_total", map[string]string{"job": "job-1"}, 1},
		{"weir_checkpoint_duration_seconds", map[string]string{"job": "job-1"}, 0.25},
		{"weir_checkpoint_size_bytes", map[string]string{"job": "job-1"}, 999},
		{"weir_late_dropped_total", map[string]string{"transform": "gbk", "reason": "closed_window"}, 1},
		{"weir_arrival_delay_milliseconds", map[string]string{"transform": "gbk", "quantile": "0.99"}, 90},
		{"weir_sdk_workers_lost_total", map[string]string{"job": "job-1"}, 2},
		{"weir_user_counter", map[string]string{"namespace": "main", "name": "words"}, 42},
		{"weir_user_distribution_max", map[string]string{"name": "len"}, 4},
		{"weir_jobs", map[string]string{"state": "RUNNING"}, 1},
	} {
		got := fams.Values(c.name, c.match)
		if len(got) != 1 || got[0].Value != c.want {
			t.Errorf("%s%v = %+v, want one sample of %v", c.name, c.match, got, c.want)
		}
	}
	// A stage without state has no state size; a watermark at the start
	// of time has no sample.
	if got := fams.Values("weir_stage_state_size_bytes", map[string]string{"stage": "s2(Sink)"}); len(got) != 0 {
		t.Errorf("stage without state reports a size: %+v", got)
	}
	if got := fams.Values("weir_stage_watermark_milliseconds", map[string]string{"stage": "s2(Sink)"}); len(got) != 0 {
		t.Errorf("a watermark at the start of time was exported: %+v", got)
	}
	if len(fams.Values("go_goroutines", nil)) != 1 {
		t.Error("no go_goroutines: the process's own metrics are missing")
	}

	mu.Lock()
	job = sampleJob(1_060_000, 10)
	mu.Unlock()
	fams, err = promtest.Scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	if got := fams.Values("weir_kafka_consumer_lag", part); len(got) != 1 || got[0].Value != 10 {
		t.Errorf("lag after the job moved: %+v, want 10", got)
	}
	if got := fams.Values("weir_source_watermark_milliseconds", part); len(got) != 1 || got[0].Value != 1_060_000 {
		t.Errorf("watermark after the job moved: %+v", got)
	}
}

func with2(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

// serveJobs serves a provider of jobs' metrics over HTTP until the test
// ends, and returns its URL.
func serveJobs(t *testing.T, jobs func() []jobview.Job) string {
	t.Helper()
	p, err := New(context.Background(), jobs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}
