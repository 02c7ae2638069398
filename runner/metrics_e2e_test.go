package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/kafkaio"
	"github.com/weir-runner/weir/telemetry/promtest"
)

// TestMetricsMoveDuringStreamingJob runs an unbounded Kafka job with
// checkpoints and scrapes /metrics with Prometheus's parser while records
// arrive in three waves, each later in event time: every area's families
// are there, and between waves the sources' watermark advances and its lag
// behind the wall clock shrinks.
func TestMetricsMoveDuringStreamingJob(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	for k, v := range map[string]string{CheckpointIntervalOption: "200ms", CheckpointDirOption: t.TempDir()} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}

	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	in := kafkaio.Read(s, kafkaio.ReadConfig{BootstrapServers: c.ListenAddrs(), Topics: []string{"events"}})
	keys := beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, kafkaKey, in))
	stats.Count(s, keys)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Execute(ctx, p); done <- err }()
	job := waitRunning(ctx, t)
	web, err := StartHTTP(ctx, inProcessServer(), "127.0.0.1:0", HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Stop(context.Background())
	url := "http://" + web.Addr() + "/metrics"
	jobLabel := map[string]string{"job": string(job.ID)}

	now := time.Now()
	var lastWM, lastLag float64
	for wave, behind := range []time.Duration{30 * time.Minute, 10 * time.Minute, 2 * time.Minute} {
		at := now.Add(-behind)
		var recs []*kgo.Record
		for i := range 200 {
			recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % 2), Key: []byte(fmt.Sprint("k", i%7)),
				Value: []byte("v"), Timestamp: at.Add(time.Duration(i) * time.Millisecond)})
		}
		if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		// Wait until both partitions' watermarks passed the wave's start.
		var fams promtest.Families
		for {
			fams, err = promtest.Scrape(url)
			if err != nil {
				t.Fatal(err)
			}
			wms := fams.Values("weir_source_watermark_milliseconds", jobLabel)
			ok := len(wms) == 2
			for _, w := range wms {
				ok = ok && w.Value >= float64(at.UnixMilli())
			}
			if ok {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("wave %d: source watermarks %+v never passed %d", wave, wms, at.UnixMilli())
			case <-time.After(50 * time.Millisecond):
			}
		}
		wm := minValue(fams.Values("weir_source_watermark_milliseconds", jobLabel))
		lag := minValue(fams.Values("weir_source_watermark_lag_seconds", jobLabel))
		t.Logf("wave %d: source watermark %s, lag %.1fs", wave, time.UnixMilli(int64(wm)).Format(time.RFC3339), lag)
		if wave > 0 && (wm <= lastWM || lag >= lastLag) {
			t.Errorf("wave %d: watermark %v (was %v) and lag %v s (was %v): want the watermark up and the lag down",
				wave, wm, lastWM, lag, lastLag)
		}
		lastWM, lastLag = wm, lag
	}

	// Every area reports for the running job.
	waitFor(ctx, t, url, "checkpoints completed", func(f promtest.Families) bool {
		v := f.Values("weir_checkpoint_completed_total", jobLabel)
		return len(v) == 1 && v[0].Value > 0
	})
	fams, err := promtest.Scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"weir_subtask_elements_total", "weir_subtask_bytes_total", "weir_subtask_time_seconds_total",
		"weir_subtask_busy_ratio", "weir_subtask_idle_ratio", "weir_subtask_backpressured_ratio",
		"weir_subtask_queue_depth", "weir_subtask_watermark_milliseconds", "weir_subtask_bundles_total",
		"weir_stage_watermark_milliseconds", "weir_stage_watermark_lag_seconds", "weir_stage_state_size_bytes",
		"weir_kafka_consumer_lag", "weir_kafka_consumer_lag_time_seconds", "messaging_client_consumed_messages_total",
		"weir_checkpoint_duration_seconds", "weir_checkpoint_size_bytes", "weir_late_dropped_total",
		"weir_arrival_delay_milliseconds", "weir_sdk_workers",
	} {
		if len(fams.Values(name, jobLabel)) == 0 {
			t.Errorf("no %s for the job", name)
		}
	}
	consumed := 0.0
	for _, v := range fams.Values("messaging_client_consumed_messages_total", jobLabel) {
		consumed += v.Value
	}
	if consumed != 600 {
		t.Errorf("consumed %v records, want 600", consumed)
	}
	if v := fams.Values("weir_kafka_consumer_lag", jobLabel); maxValue(v) != 0 {
		t.Errorf("consumer lag %+v once every record was read, want 0", v)
	}

	// Ended by cancelling: draining a Kafka job has its own test.
	if _, err := inProcessServer().Cancel(ctx, &jobpb.CancelJobRequest{JobId: string(job.ID)}); err != nil {
		t.Fatal(err)
	}
	<-done
	if st, _ := job.State(); st != jobpb.JobState_CANCELLED {
		t.Fatalf("job state %v, want CANCELLED", st)
	}
}

func waitFor(ctx context.Context, t *testing.T, url, what string, ok func(promtest.Families) bool) {
	t.Helper()
	for {
		f, err := promtest.Scrape(url)
		if err != nil {
			t.Fatal(err)
		}
		if ok(f) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func minValue(s []promtest.Sample) float64 {
	m := 0.0
	for i, v := range s {
		if i == 0 || v.Value < m {
			m = v.Value
		}
	}
	return m
}

func maxValue(s []promtest.Sample) float64 {
	m := 0.0
	for i, v := range s {
		if i == 0 || v.Value > m {
			m = v.Value
		}
	}
	return m
}
