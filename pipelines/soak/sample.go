package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/weir-runner/weir/checkpoint"
	"github.com/weir-runner/weir/runner"
	"github.com/weir-runner/weir/telemetry/promtest"
)

// sample is what one look at the running soak job finds.
type sample struct {
	at time.Duration // since the job started running

	serverRSS, serverHeap    int64 // bytes: /proc VmRSS; go_memstats_heap_inuse_bytes
	serverGoHeld             int64 // bytes the Go runtime holds from the OS: go_memstats_sys_bytes - go_memstats_heap_released_bytes
	goroutines               int   // the server's, from /metrics
	serverFDs, serverThreads int   // /proc/PID/fd, /proc/PID/status
	workerRSS                int64 // the SDK worker (the LOOPBACK client)
	workerFDs                int

	pebbleFiles, pebbleSST int // files in the job's store folder, and its sstables
	pebbleBytes            int64
	ckptFolders            int // chk-N and chk-N.tmp folders in the checkpoint root
	ckptBytes              int64

	messagesKept  int // messages the job keeps (bounded)
	messagesTotal int // messages ever added: the newest message's sequence number

	produced, consumed int64   // records, totals
	producedRate       float64 // records per second since the previous sample
	consumedRate       float64
	consumerLag        int64   // records not read yet, over the partitions
	watermarkLag       float64 // seconds: the largest stage watermark lag

	ckptCompleted, ckptFailed int64           // totals
	ckptDurations             []time.Duration // checkpoints completed since the previous sample (of the last ten kept)
	ckptBytesLast             int64           // the newest checkpoint's size
}

// sampler takes samples of one soak run.
type sampler struct {
	server, worker *proc
	metricsURL     string
	client         jobpb.JobServiceClient
	jobID          string
	storeRoot      string // the server's TMPDIR: its job stores are weir-state-* in it
	ckptRoot       string
	prod           *producer
	start          time.Time
	prev           *sample
	lastCkpt       uint64 // the newest checkpoint id counted
}

func (s *sampler) take(ctx context.Context) (sample, error) {
	x := sample{at: time.Since(s.start)}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	x.serverRSS, err = rss(s.server.pid())
	add(err)
	x.serverFDs, err = openFiles(s.server.pid())
	add(err)
	x.serverThreads, err = threads(s.server.pid())
	add(err)
	x.workerRSS, err = rss(s.worker.pid())
	add(err)
	x.workerFDs, err = openFiles(s.worker.pid())
	add(err)
	add(s.scrape(&x))
	add(s.store(&x))
	add(s.messages(ctx, &x))
	add(s.checkpoints(ctx, &x))
	x.produced = s.prod.produced()
	if p := s.prev; p != nil {
		dt := (x.at - p.at).Seconds()
		x.producedRate = float64(x.produced-p.produced) / dt
		x.consumedRate = float64(x.consumed-p.consumed) / dt
	}
	s.prev = &x
	return x, errors.Join(errs...)
}

// scrape reads the server's /metrics.
func (s *sampler) scrape(x *sample) error {
	fams, err := promtest.Scrape(s.metricsURL)
	if err != nil {
		return err
	}
	sum := func(name string) float64 {
		var v float64
		for _, smp := range fams.Values(name, nil) {
			v += smp.Value
		}
		return v
	}
	maxOf := func(name string) float64 {
		var v float64
		for _, smp := range fams.Values(name, nil) {
			v = max(v, smp.Value)
		}
		return v
	}
	x.goroutines = int(sum("go_goroutines"))
	x.serverHeap = int64(sum("go_memstats_heap_inuse_bytes"))
	x.serverGoHeld = int64(sum("go_memstats_sys_bytes") - sum("go_memstats_heap_released_bytes"))
	x.consumed = int64(sum("messaging_client_consumed_messages_total"))
	x.consumerLag = int64(sum("weir_kafka_consumer_lag"))
	x.watermarkLag = maxOf("weir_stage_watermark_lag_seconds")
	return nil
}

// stageCount is one stage's elements in and out over the job's life.
type stageCount struct {
	stage   string
	in, out int64
}

// stageCounts reads each stage's element totals and the elements dropped
// as late, from /metrics; where a loss happened shows as a stage that
// emitted more than the next one took in.
func stageCounts(metricsURL string) ([]stageCount, int64, error) {
	fams, err := promtest.Scrape(metricsURL)
	if err != nil {
		return nil, 0, err
	}
	by := map[string]*stageCount{}
	for _, smp := range fams.Values("weir_subtask_elements_total", nil) {
		st := smp.Labels["stage"]
		c := by[st]
		if c == nil {
			c = &stageCount{stage: st}
			by[st] = c
		}
		switch smp.Labels["direction"] {
		case "in":
			c.in += int64(smp.Value)
		case "out":
			c.out += int64(smp.Value)
		}
	}
	var out []stageCount
	for _, c := range by {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b stageCount) int { return strings.Compare(a.stage, b.stage) })
	var dropped float64
	for _, smp := range fams.Values("weir_late_dropped_total", nil) {
		dropped += smp.Value
	}
	return out, int64(dropped), nil
}

// store measures the job's Pebble store and its checkpoint folders.
func (s *sampler) store(x *sample) error {
	dirs, err := filepath.Glob(filepath.Join(s.storeRoot, "weir-state-*"))
	if err != nil {
		return err
	}
	for _, d := range dirs {
		n, b, err := dirUsage(d, nil)
		if err != nil {
			return err
		}
		sst, _, err := dirUsage(d, func(name string) bool { return strings.HasSuffix(name, ".sst") })
		if err != nil {
			return err
		}
		x.pebbleFiles += n
		x.pebbleSST += sst
		x.pebbleBytes += b
	}
	es, err := os.ReadDir(s.ckptRoot)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range es {
		if e.IsDir() && strings.HasPrefix(e.Name(), "chk-") {
			x.ckptFolders++
		}
	}
	_, x.ckptBytes, err = dirUsage(s.ckptRoot, nil)
	return err
}

// messages counts the job's messages through GetMessageStream: the
// stream sends what the job keeps, then its state.
func (s *sampler) messages(ctx context.Context, x *sample) error {
	msgs, _, err := jobMessages(ctx, s.client, s.jobID)
	if err != nil {
		return err
	}
	x.messagesKept = len(msgs)
	if len(msgs) > 0 {
		x.messagesTotal, _ = strconv.Atoi(msgs[len(msgs)-1].GetMessageId())
	}
	return nil
}

// jobMessages returns the messages job id keeps and its state.
func jobMessages(ctx context.Context, c jobpb.JobServiceClient, id string) ([]*jobpb.JobMessage, jobpb.JobState_Enum, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel() // ends the stream
	stream, err := c.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: id})
	if err != nil {
		return nil, 0, fmt.Errorf("messages of %s: %w", id, err)
	}
	var msgs []*jobpb.JobMessage
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return msgs, 0, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("messages of %s: %w", id, err)
		}
		if m := resp.GetMessageResponse(); m != nil {
			msgs = append(msgs, m)
		}
		if st := resp.GetStateResponse(); st != nil {
			return msgs, st.GetState(), nil
		}
	}
}

// checkpoints reads the job's checkpoint statistics: totals, and the
// durations of those completed since the last sample.
func (s *sampler) checkpoints(ctx context.Context, x *sample) error {
	resp, err := s.client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: s.jobID})
	if err != nil {
		return fmt.Errorf("metrics of %s: %w", s.jobID, err)
	}
	r := runner.ReadCheckpointMetrics(resp.GetMetrics().GetCommitted())
	x.ckptCompleted, x.ckptFailed = r.Completed, r.Failed
	newest := s.lastCkpt
	for _, c := range r.Checkpoints { // newest first
		if c.ID <= s.lastCkpt {
			break
		}
		newest = max(newest, c.ID)
		if c.Status == checkpoint.Completed {
			x.ckptDurations = append(x.ckptDurations, c.Duration)
		}
	}
	if len(r.Checkpoints) > 0 {
		x.ckptBytesLast = r.Checkpoints[0].Bytes
	}
	s.lastCkpt = newest
	slices.Sort(x.ckptDurations)
	return nil
}
