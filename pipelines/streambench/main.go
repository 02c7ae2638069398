// Command streambench measures weir's exactly-once streaming: a job that
// reads Kafka, sums per key in one-second event-time windows and writes
// the sums exactly once to Kafka (job.go), against a real broker.
//
// For each checkpoint interval (-intervals, 100ms, 1s and 10s by default) a
// producer writes "key,1" records at a fixed rate (-rate) stamped with
// their produce time as Kafka create time, which the job takes as event
// time, and a read_committed consumer of the output notes when each
// window's sum becomes visible. The latency of an output record is its
// visible time minus its window's end: the window's end is the event time
// that closes it, the earliest moment its sum could be known, so the
// latency is all weir's (watermark, bundle, checkpoint, transaction
// commit) plus the broker's and the consumer's fetch. Windows of a warm-up
// are left out. Every measured sum is checked against what was produced:
// a missing, wrong or doubled sum fails the bench.
//
// A max-rate run (-events records produced before the job starts, at a 1 s
// interval) gives the sustained events per second per core: events over
// the job process's CPU seconds (runner and SDK worker share it,
// --runner=weir), from its start until the last sum is visible.
//
// `make bench-streaming` starts a broker (internal/tools/kafka.sh) and
// writes the "Exactly-once streaming" section of docs/benchmarks.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/weir-runner/weir/internal/benchproc"
)

var (
	brokers    = flag.String("brokers", os.Getenv("WEIR_KAFKA_BROKERS"), "Kafka bootstrap servers, comma separated (default $WEIR_KAFKA_BROKERS)")
	intervals  = flag.String("intervals", "100ms,1s,10s", "checkpoint intervals of the latency runs")
	rate       = flag.Int("rate", 2000, "records per second of the latency runs")
	keys       = flag.Int("keys", 100, "keys the records are spread over")
	partitions = flag.Int("partitions", 4, "partitions of the input topic")
	measure    = flag.Duration("measure", 30*time.Second, "event time of the windows measured in each latency run, after the warm-up")
	warmup     = flag.Duration("warmup", 5*time.Second, "event time left out at the start of a latency run (at least two checkpoint intervals are)")
	events     = flag.Int("events", 1_000_000, "records of the max-rate run (0: none)")
	out        = flag.String("out", "", "markdown file to write the section to (e.g. docs/benchmarks.md)")
	keepLogs   = flag.Bool("keep-logs", false, "keep each job's folder (its log, job.log, and checkpoints) and say where")
	jobFlags   = flag.String("job-flags", "", "extra flags for the job (e.g. --weir_max_bundle_time=100ms), space-separated")

	job        = flag.Bool("job", false, "run the job (used by the bench itself)")
	inTopic    = flag.String("in_topic", "", "with -job: the input topic")
	outTopic   = flag.String("out_topic", "", "with -job: the output topic")
	windowSize = flag.Duration("window", time.Second, "the job's window size")
)

func main() {
	flag.Parse()
	if *job {
		if err := runJob(context.Background()); err != nil {
			log.Fatalf("streambench job: %v", err)
		}
		return
	}
	if *brokers == "" {
		log.Fatal("streambench: no broker: set -brokers or WEIR_KAFKA_BROKERS (make bench-streaming starts one)")
	}
	if err := bench(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func bench(ctx context.Context) error {
	log.Printf("load average before: %s", benchproc.LoadAverage())
	var lat []latencyResult
	for _, f := range split(*intervals) {
		iv, err := time.ParseDuration(f)
		if err != nil {
			return fmt.Errorf("-intervals: %w", err)
		}
		r, err := latencyRun(ctx, iv)
		if err != nil {
			return fmt.Errorf("interval %v: %w", iv, err)
		}
		log.Printf("interval %v: p50 %v p99 %v max %v over %d sums; %.2f cores", iv, r.p50, r.p99, r.max, r.n, r.cores)
		lat = append(lat, r)
	}
	var tp *throughputResult
	if *events > 0 {
		r, err := throughputRun(ctx)
		if err != nil {
			return fmt.Errorf("max rate: %w", err)
		}
		log.Printf("max rate: %d events in %v, %.1f s CPU: %.0f events/s, %.0f events/s per core",
			r.events, r.wall, r.cpu.Seconds(), r.perSecond(), r.perCore())
		tp = &r
	}
	section := render(lat, tp)
	fmt.Print(section)
	if *out != "" {
		return benchproc.WriteSection(*out, heading, section)
	}
	return nil
}

// jobProc is a running job.
type jobProc struct {
	cmd  *exec.Cmd
	logs string
}

// startJob runs this program with -job, in its own checkpoint folder.
func startJob(name, in, outT string, interval time.Duration) (*jobProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "streambench-")
	if err != nil {
		return nil, err
	}
	args := []string{"-job", "--runner=weir", "--job_name=" + name, "-brokers=" + *brokers,
		"-in_topic=" + in, "-out_topic=" + outT, "-window=" + windowSize.String(),
		"--weir_checkpoint_interval=" + interval.String(),
		"--weir_checkpoint_dir=" + filepath.Join(dir, "checkpoints")}
	args = append(args, strings.Fields(*jobFlags)...)
	logs := filepath.Join(dir, "job.log")
	lf, err := os.Create(logs)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	lf.Close()
	return &jobProc{cmd: cmd, logs: logs}, nil
}

// cpu is the job's CPU time so far.
func (j *jobProc) cpu() (time.Duration, error) { return benchproc.CPUTime(j.cmd.Process.Pid) }

// stop kills the job: it runs until killed, as a streaming job does.
func (j *jobProc) stop() {
	_ = j.cmd.Process.Kill()
	_ = j.cmd.Wait()
	if *keepLogs {
		log.Printf("job log: %s", j.logs)
		return
	}
	_ = os.RemoveAll(filepath.Dir(j.logs))
}

// tail is the end of the job's log, for an error.
func (j *jobProc) tail() string {
	b, _ := os.ReadFile(j.logs)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
