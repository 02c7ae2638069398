// Command soak is weir's soak run (`make soak`, not part of `make test`):
// a streaming Kafka job checkpointing every second runs for
// SOAK_DURATION (default 30m) against a real Kafka broker while a
// producer writes a steady stream, and everything that could leak is
// sampled every -every: weir serve's resident memory, Go heap,
// goroutines and open files, the SDK worker's memory and open files, the
// job's Pebble files and bytes, its checkpoint folders, its job
// messages, and its throughput, watermark lag and checkpoint durations.
//
// The run:
//
//  1. builds bin/weir and bin/soakjob (pipelines/soak/soakjob: Kafka read
//     with idleness and out-of-orderness, 10 s windows with early, on-time
//     and late firings and allowed lateness, a stateful step, an
//     exactly-once Kafka sink);
//  2. starts a fresh Kafka broker with internal/tools/kafka.sh in -dir,
//     weir serve (its state and temporary folders in -dir too, so the job's
//     store and checkpoints are found), and the producer;
//  3. submits the job through weir serve's job service with
//     --runner=universal and a LOOPBACK worker, which is the soakjob
//     process, and samples until the duration has passed;
//  4. stops the producer, waits until the job has read every record, and
//     drains it, so every window fires its last pane;
//  5. reads the output with read_committed and checks it exactly against
//     what was produced, and judges every figure's flatness (flat.go);
//  6. writes the samples to -csv and a summary to -out's "## Soak"
//     section, and exits 1 if anything grew or the output is not exact.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

var (
	duration   = flag.Duration("duration", envDuration("SOAK_DURATION", 30*time.Minute), "how long the job runs under load (default: $SOAK_DURATION, else 30m)")
	every      = flag.Duration("every", 10*time.Second, "time between samples")
	rate       = flag.Int("rate", 2000, "records produced per second")
	keys       = flag.Int("keys", 64, "distinct keys")
	partitions = flag.Int("partitions", 4, "partitions of the input topic (the last is bursty, idle two thirds of each minute)")
	checkEvery = flag.Duration("checkpoint-interval", time.Second, "the job's checkpoint interval")
	bin        = flag.String("bin", "bin", "directory for the binaries")
	dir        = flag.String("dir", "bin/soak", "work folder: the broker, weir's state, logs (emptied first)")
	out        = flag.String("out", "", "markdown file whose \"## Soak\" section gets the summary (e.g. docs/reliability.md)")
	csvPath    = flag.String("csv", "", "file for the samples as CSV (e.g. docs/soak/samples.csv)")
	seed       = flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the producer")
)

// jobWindow is the soak job's window (soakjob.Window).
const jobWindow = 10 * time.Second

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			log.Fatalf("soak: %s=%q: %v", name, v, err)
		}
		return d
	}
	return def
}

func main() {
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		log.Printf("soak: %v", err)
		stop()
		os.Exit(1)
	}
}

// result is what a run found, for the report.
type result struct {
	started, ended time.Time
	samples        []sample
	verdicts       []verdict
	outcome        outcome
	exactErr       error // the output could not be read or checked
	produced       int64
	messages       []string // the job's distinct message texts, with counts
	explained      []string // the input records that could be the ones the output lacks
	stages         []stageCount
	lateDropped    int64
	failures       []string
}

func run(ctx context.Context) error {
	if err := buildBinaries(ctx, *bin); err != nil {
		return err
	}
	work, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(work, "state")); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(work, "tmp")); err != nil {
		return err
	}
	for _, d := range []string{"state", "tmp"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			return err
		}
	}
	kafka, err := startKafka(ctx, filepath.Join(work, "kafka"))
	if err != nil {
		return err
	}
	defer func() {
		if err := kafka.stop(); err != nil {
			log.Printf("soak: stopping the broker: %v", err)
		}
	}()
	brokers := []string{kafka.addr}
	log.Printf("soak: Kafka broker on %s", kafka.addr)
	if err := createTopics(ctx, brokers, int32(*partitions), "in", "out"); err != nil {
		return err
	}

	srv, endpoint, metricsURL, err := startServer(work)
	if err != nil {
		return err
	}
	defer srv.stop(30 * time.Second)
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := jobpb.NewJobServiceClient(conn)

	prod, err := newProducer(brokers, "in", *rate, *keys, int32(*partitions), jobWindow, *seed)
	if err != nil {
		return err
	}
	prodCtx, stopProd := context.WithCancel(ctx)
	defer stopProd()
	prodDone := make(chan error, 1)
	go func() { prodDone <- prod.run(prodCtx) }()

	job, err := startProc("soakjob", filepath.Join(work, "job.log"), nil, []string{filepath.Join(*bin, "soakjob"),
		"--runner=universal", "--endpoint=" + endpoint, "--environment_type=LOOPBACK", "--job_name=soak",
		"--brokers=" + kafka.addr, "--in_topic=in", "--out_topic=out", "--transactional_id=soak",
		"--weir_checkpoint_interval=" + checkEvery.String()}, nil)
	if err != nil {
		return err
	}
	defer job.stop(10 * time.Second)
	id, err := waitRunning(ctx, client, job)
	if err != nil {
		return err
	}
	log.Printf("soak: job %s running; sampling every %v for %v at %d records/s", id, *every, *duration, *rate)

	res := &result{started: time.Now()}
	s := &sampler{server: srv, worker: job, metricsURL: metricsURL, client: client, jobID: id,
		storeRoot: filepath.Join(work, "tmp"), ckptRoot: filepath.Join(work, "state", "jobs", "soak", "checkpoints"),
		prod: prod, start: res.started}
	loopErr := sampleLoop(ctx, s, res, prodDone)
	stopProd()
	if err := <-prodDone; err != nil && loopErr == nil {
		loopErr = err
	}
	res.ended = time.Now()
	res.produced = prod.produced()
	if loopErr == nil {
		loopErr = drain(ctx, client, s, job, res.produced)
	}
	if loopErr == nil {
		// The drained job's series stay on /metrics until it is forgotten.
		res.stages, res.lateDropped, loopErr = stageCounts(metricsURL)
	}
	if loopErr == nil {
		got, err := readOutput(ctx, brokers, "out", int32(*partitions))
		res.exactErr = err
		if err == nil {
			res.outcome = check(prod.want(), got)
			res.explained, err = explain(ctx, brokers, "in", jobWindow, res.outcome.short)
			if err != nil {
				res.explained = []string{fmt.Sprintf("(could not read the input again: %v)", err)}
			}
		}
	} else {
		res.exactErr = fmt.Errorf("not checked: %w", loopErr)
	}
	res.messages = messageSummary(ctx, client, id)
	res.verdicts = verdicts(columns(*rate), res.samples)
	return finish(res, loopErr)
}

// sampleLoop samples every -every until -duration has passed, the
// context ends, the producer fails, or the job stops running.
func sampleLoop(ctx context.Context, s *sampler, res *result, prodDone chan error) error {
	tick := time.NewTicker(*every)
	defer tick.Stop()
	deadline := time.After(*duration)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-prodDone:
			prodDone <- err // for the caller
			return fmt.Errorf("the producer stopped: %v", err)
		case <-deadline:
			return nil
		case <-tick.C:
		}
		x, err := s.take(ctx)
		if err != nil {
			if done, werr := s.worker.exited(); done {
				return fmt.Errorf("the job's client exited (%v)", werr)
			}
			return fmt.Errorf("sample at %v: %w", x.at.Round(time.Second), err)
		}
		res.samples = append(res.samples, x)
		log.Printf("soak: %4.0fs server %3d MB heap %3d MB g %4d fds %3d | worker %3d MB | pebble %3d files %5.1f MB | chk %d dirs %.1f MB | msgs %d | in %5.0f/s lag %d wm %.1fs | ckpt %d median %v",
			x.at.Seconds(), x.serverRSS/mb, x.serverHeap/mb, x.goroutines, x.serverFDs, x.workerRSS/mb,
			x.pebbleFiles, float64(x.pebbleBytes)/mb, x.ckptFolders, float64(x.ckptBytes)/mb, x.messagesTotal,
			x.consumedRate, x.consumerLag, x.watermarkLag, len(x.ckptDurations), pick(x.ckptDurations, 0.5))
		_, st, err := jobMessages(ctx, s.client, s.jobID)
		if err != nil {
			return err
		}
		if st != jobpb.JobState_RUNNING {
			return fmt.Errorf("the job is %v", st)
		}
	}
}

// startServer starts weir serve with its state and temporary folders in
// work, and returns it with its job endpoint and metrics URL.
func startServer(work string) (*proc, string, string, error) {
	var endpoint, web string
	srv, err := startProc("weir serve", filepath.Join(work, "weir.log"), []string{"TMPDIR=" + filepath.Join(work, "tmp")},
		[]string{filepath.Join(*bin, "weir"), "serve", "--job-port=0", "--http-addr=127.0.0.1:0",
			"--state-dir=" + filepath.Join(work, "state"), "--resume-jobs=false"},
		func(l string) bool {
			if rest, ok := strings.CutPrefix(l, "weir job service on "); ok {
				endpoint, _, _ = strings.Cut(rest, ";")
			}
			if _, rest, ok := strings.Cut(l, "Prometheus metrics on "); ok {
				web = strings.TrimSpace(rest)
			}
			return endpoint != "" && web != ""
		})
	if err != nil {
		return nil, "", "", err
	}
	return srv, endpoint, web, nil
}

// createTopics creates each topic with partitions partitions and waits
// until every partition's leader serves it.
func createTopics(ctx context.Context, brokers []string, partitions int32, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topics...)
	if err != nil {
		return fmt.Errorf("creating topics %v: %w", topics, err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("creating topics %v: %w", topics, err)
	}
	for ctx.Err() == nil {
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			return nil
		}
		if !kerr.IsRetriable(err) {
			return fmt.Errorf("end offsets of the new topics: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return ctx.Err()
}

// waitRunning waits until the job named soak is RUNNING and returns its
// id.
func waitRunning(ctx context.Context, c jobpb.JobServiceClient, job *proc) (string, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if done, err := job.exited(); done {
			return "", fmt.Errorf("the job's client exited (%v) before the job ran; see its log", err)
		}
		resp, err := c.GetJobs(ctx, &jobpb.GetJobsRequest{})
		if err != nil {
			return "", err
		}
		for _, info := range resp.GetJobInfo() {
			if info.GetJobName() == "soak" && info.GetState() == jobpb.JobState_RUNNING {
				return info.GetJobId(), nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return "", errors.New("the job was not RUNNING after 3 minutes")
}

// drain waits until the job has read every record produced, then drains
// it: each window fires its last pane and the sink commits it.
func drain(ctx context.Context, c jobpb.JobServiceClient, s *sampler, job *proc, produced int64) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var x sample
		if err := s.scrape(&x); err != nil {
			return err
		}
		if x.consumed >= produced {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the job read %d of %d records in the 10 minutes after the producer stopped", x.consumed, produced)
		}
		time.Sleep(time.Second)
	}
	if _, err := c.Drain(ctx, &jobpb.DrainJobRequest{JobId: s.jobID}); err != nil {
		return fmt.Errorf("draining %s: %w", s.jobID, err)
	}
	deadline = time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := c.GetState(ctx, &jobpb.GetJobStateRequest{JobId: s.jobID})
		if err != nil {
			return err
		}
		switch st := resp.GetState(); st {
		case jobpb.JobState_DRAINED:
			select { // the client ends with the job
			case <-job.done:
			case <-time.After(time.Minute):
			}
			return nil
		case jobpb.JobState_RUNNING, jobpb.JobState_DRAINING:
		default:
			return fmt.Errorf("the drained job ended %v", st)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return errors.New("the job was not DRAINED 5 minutes after the drain")
}
