package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weir-runner/weir/internal/kafkatest"
)

// The crash test of issue 7, under the faults of issue 19: a job reading
// Kafka into one-minute event-time windows and an exactly-once sink runs
// while its input is produced, and meanwhile
//
//   - the job is killed with SIGKILL (workers and all) and started again
//     with the same name and checkpoint folder, as a supervisor would;
//   - its SDK worker processes (a PROCESS environment: this binary in
//     worker mode) are killed with SIGKILL, mid-bundle when the job is
//     busy, and the job must replace them and run their bundles again;
//   - the broker is killed or stopped and started again on the same port
//     and data, while the job reads, writes and commits.
//
// The sink's output must equal the expected window sums exactly: nothing
// lost, nothing doubled. make test runs a short schedule on each sink;
// make crash runs longer ones (-crash.long).
//
// The broker is kfake as its own process (persisting to a folder, so a
// restart keeps its data), or a real Kafka broker (kafkatest): the shared
// one in the short schedule, which other tests use and which therefore is
// never restarted, and one of the test's own (kafkatest.StartOwn) in the
// long one.

var (
	long    = flag.Bool("crash.long", false, "run the long schedules (make crash)")
	seedArg = flag.Int64("crash.seed", 0, "seed of the schedule and the input's pace; 0 picks one")
	rounds  = flag.Int("crash.rounds", 3, "rounds of the long schedule per sink, each with its own seed")
)

const (
	partitions = 3
	keys       = 5
)

// schedule is what a crash test injects, at random moments spread over
// the time its input takes to produce (about a second per batch).
type schedule struct {
	perPart        int // records per partition, one second of event time apart
	jobKills       int
	workerKills    int
	brokerRestarts int
}

var (
	short   = schedule{perPart: 400, jobKills: 8, workerKills: 6, brokerRestarts: 2}
	longRun = schedule{perPart: 3000, jobKills: 40, workerKills: 40, brokerRestarts: 10}
	// realBrokerRestarts bounds the restarts of a real broker (crashTest).
	realBrokerRestarts = 3
)

// The Kafka sink's test runs on kfake and on a real broker; the file
// sink's on kfake (the PostgreSQL sink's: crash_pg_test.go).
func TestCrashExactlyOnceKafka(t *testing.T) {
	t.Run(kafkatest.KindFake, func(t *testing.T) { crashTests(t, kafkaSink, kfakeCluster) })
	t.Run(kafkatest.KindReal, func(t *testing.T) { crashTests(t, kafkaSink, realCluster) })
}
func TestCrashExactlyOnceFiles(t *testing.T) { crashTests(t, fileSink, kfakeCluster) }

// sink is where a crash test's job writes.
type sink struct {
	name string
	// open readies the sink of one crash test, whose folder is dir and
	// whose output topic (made for every sink) is out: it returns the
	// job's flags for it and a reader of what the job committed there.
	open func(t *testing.T, dir, brokers, out string) (args []string, read func() ([]string, error))
}

var (
	kafkaSink = sink{"kafka", func(_ *testing.T, _, brokers, out string) ([]string, func() ([]string, error)) {
		return []string{"--out_topic=" + out}, func() ([]string, error) { return readTopic(brokers, out) }
	}}
	fileSink = sink{"file", func(_ *testing.T, dir, _, _ string) ([]string, func() ([]string, error)) {
		out := filepath.Join(dir, "out")
		return []string{"--out_dir=" + out}, func() ([]string, error) { return readFiles(out) }
	}}
)

func crashTests(t *testing.T, sink sink, broker func(*testing.T, bool) cluster) {
	if testing.Short() {
		t.Skip("builds and kills a job many times")
	}
	if !*long {
		crashTest(t, sink, broker(t, false), short, seed())
		return
	}
	for r := range *rounds {
		t.Run(fmt.Sprint("round", r), func(t *testing.T) { crashTest(t, sink, broker(t, true), longRun, seed()) })
	}
}

// cluster is the broker of one crash test: its addresses and the names of
// what the test makes on it, and how to restart it (nil when it is shared
// with other tests and must stay up).
type cluster struct {
	*kafkatest.Broker
	restart restarter
}

type restarter interface {
	// stop ends the broker, with SIGKILL (a crash) or SIGTERM.
	stop(kill bool)
	// start starts it again on the same address and data.
	start() error
}

// kfakeCluster starts kfake as its own process.
func kfakeCluster(t *testing.T, _ bool) cluster {
	b := startKfake(t, goBuild(t, "kfake", "../../internal/tools/kfake"), t.TempDir())
	return cluster{&kafkatest.Broker{Kind: kafkatest.KindFake, Addrs: []string{b.addr()}}, b}
}

// realCluster is the shared real broker, or for the long schedule one of
// the test's own that it may restart.
func realCluster(t *testing.T, long bool) cluster {
	if !long {
		return cluster{Broker: kafkatest.Real(t)}
	}
	o := kafkatest.StartOwn(t)
	return cluster{o.Broker, ownRestarter{t, o}}
}

type ownRestarter struct {
	t *testing.T
	o *kafkatest.Own
}

func (r ownRestarter) stop(kill bool) {
	if kill {
		r.o.Kill(r.t)
	} else {
		r.o.Stop(r.t)
	}
}

func (r ownRestarter) start() error { r.o.Start(r.t); return nil }

func seed() int64 {
	if *seedArg != 0 {
		return *seedArg
	}
	return time.Now().UnixNano()
}

// fault is one event of a schedule.
type fault int

const (
	killJob fault = iota
	killWorker
	restartBroker
)

// plan returns the schedule's faults in a random order.
func (s schedule) plan(rng *rand.Rand) []fault {
	var fs []fault
	for range s.jobKills {
		fs = append(fs, killJob)
	}
	for range s.workerKills {
		fs = append(fs, killWorker)
	}
	for range s.brokerRestarts {
		fs = append(fs, restartBroker)
	}
	rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	return fs
}

// tally counts what a run injected and what the job's logs say of it.
type tally struct {
	jobKills, workerKills, workersMissed, brokerRestarts int
}

func crashTest(t *testing.T, sink sink, b cluster, sc schedule, seed int64) {
	switch {
	case b.restart == nil:
		sc.brokerRestarts = 0
	case b.Kind == kafkatest.KindReal:
		// A real broker's restart is a JVM's clean stop and start, 20 to
		// 40 s each on a busy machine: ten in 2.5 minutes of input left it
		// down most of the time, and the test's producer failed to write
		// one batch in five minutes.
		sc.brokerRestarts = min(sc.brokerRestarts, realBrokerRestarts)
	}
	t.Logf("seed %d, %s broker, %+v", seed, b.Kind, sc)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	bin := build(t)
	// Made here, not on first use: a real broker, like production ones,
	// does not create them, and kfake keeps a topic it created on first
	// use only in memory until it stops cleanly, so a SIGKILL loses it.
	in, out := b.Topic(t, "in", partitions), b.Topic(t, "out", partitions)
	brokers := b.String()

	logs := filepath.Join(dir, "logs")
	if d := os.Getenv("CRASHJOB_LOGS"); d != "" { // keep the logs after the test
		logs = filepath.Join(d, fmt.Sprintf("%s-%s-%d", sink.name, b.Kind, seed))
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	worker := writeWorkerScript(t, dir, bin)
	args := []string{
		"--runner=weir", "--job_name=crashjob-" + sink.name, "--brokers=" + brokers, "--in_topic=" + in,
		"--transactional_id=" + b.Name(t, "crashjob"),
		"--weir_checkpoint_interval=200ms",
		"--weir_checkpoint_dir=" + filepath.Join(dir, "checkpoints"),
		"--environment_type=PROCESS", `--environment_config={"command":"` + worker + `"}`,
		"--worker_binary=" + bin,
	}
	sinkArgs, read := sink.open(t, dir, brokers, out)
	args = append(args, sinkArgs...)
	j := &job{t: t, bin: bin, args: args, logs: logs}
	defer j.kill()

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := expected(t0, sc.perPart)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	produced := make(chan error, 1)
	var plog notes // the producer's retries, told once it is done
	go func() { produced <- produce(ctx, brokers, in, t0, sc.perPart, rng.Int63(), plog.add) }()

	j.start()
	faults := sc.plan(rng)
	// Production takes about a second per batch; spread the faults over it.
	mean := time.Duration(sc.perPart/batch) * time.Second / time.Duration(len(faults)+1)
	var n tally
	for _, f := range faults {
		j.sleep(time.Duration(float64(mean) * (0.4 + 1.2*rng.Float64())))
		switch f {
		case killJob:
			t.Logf("%s killing run %d", time.Now().Format("15:04:05.000"), j.runs-1)
			j.kill()
			n.jobKills++
			j.start()
		case killWorker:
			if pid := j.killWorker(rng); pid != 0 {
				t.Logf("%s killed worker %d of run %d", time.Now().Format("15:04:05.000"), pid, j.runs-1)
				n.workerKills++
			} else {
				n.workersMissed++
			}
		case restartBroker:
			kill := rng.Intn(2) == 0
			t.Logf("%s stopping the broker (SIGKILL %v)", time.Now().Format("15:04:05.000"), kill)
			b.restart.stop(kill)
			j.sleep(time.Duration(300+rng.Intn(2500)) * time.Millisecond) // the outage
			if err := b.restart.start(); err != nil {
				t.Fatalf("restarting the broker: %v", err)
			}
			n.brokerRestarts++
		}
	}
	err := <-produced
	for _, n := range plog.take() {
		t.Log("producer: " + n)
	}
	if err != nil {
		t.Fatalf("producing the input: %v", err)
	}
	j.ensure()

	var got []string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		j.ensure()
		if got, err = read(); err != nil {
			t.Fatal(err)
		}
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Let a few more checkpoints complete, so that a duplicate the restored
	// job would commit has the chance to show.
	time.Sleep(2 * time.Second)
	got, err = read()
	if err != nil {
		t.Fatal(err)
	}
	// The job's warnings (runner/workers.go, executor/split.go) say what
	// it saw of the worker kills: a kill that found a bundle in flight
	// retries it.
	lost, retried := countLines(logs, "was lost; starting a new one"), countLines(logs, "bundle lost with its worker")
	t.Logf("%s sink on %s: %d runs: %d job kills, %d worker kills (%d found no worker), %d broker restarts, %d runs ended by themselves; "+
		"the job reported %d lost workers and %d bundles retried; %d output lines",
		sink.name, b.Kind, j.runs, n.jobKills, n.workerKills, n.workersMissed, n.brokerRestarts, j.exitedAlone, lost, retried, len(got))
	if n.workerKills >= 5 && (lost == 0 || retried == 0) {
		t.Errorf("%d worker kills, yet the job reported %d lost workers and %d bundles retried: the kills did not reach it",
			n.workerKills, lost, retried)
	}
	if diff := compare(got, want); diff != "" {
		t.Errorf("output differs from the expected window sums (logs in %s):\n%s", logs, diff)
		keepLogs(t, logs)
	}
}

// notes collects lines from a goroutine for the test to log: a goroutine
// must not call t.Log once the test may have ended.
type notes struct {
	mu    sync.Mutex
	lines []string
}

func (n *notes) add(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lines = append(n.lines, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

func (n *notes) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.lines
	n.lines = nil
	return out
}

// sleep waits d, starting the job again meanwhile if it ends by itself.
func (j *job) sleep(d time.Duration) {
	end := time.After(d)
	for {
		var exited <-chan struct{}
		if j.cur != nil {
			exited = j.cur.exited
		}
		select {
		case <-end:
			return
		case <-exited:
			j.ensure()
		}
	}
}

// killWorker kills one of the job's SDK worker processes, waiting a
// little for one to exist (a run that just started has none yet), and
// returns its pid (0 if none came).
func (j *job) killWorker(rng *rand.Rand) int {
	for range 20 {
		if ws := j.workers(); len(ws) > 0 {
			pid := ws[rng.Intn(len(ws))]
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return pid
		}
		j.sleep(100 * time.Millisecond)
	}
	return 0
}

// writeWorkerScript writes the PROCESS environment's command: the job's
// own binary in worker mode. weir passes --id and its endpoints; the Go
// SDK's worker takes --id, --control_endpoint and --logging_endpoint.
func writeWorkerScript(t *testing.T, dir, bin string) string {
	path := filepath.Join(dir, "worker.sh")
	script := `#!/bin/sh
set -- $(for a; do case $a in --artifact_endpoint=*|--provision_endpoint=*) ;; *) echo "$a";; esac; done)
exec ` + bin + ` --worker "$@"
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// built holds the binaries the tests build, each once per test process:
// linking them takes longer than a crash test's subtest on a busy machine.
var built struct {
	sync.Mutex
	dir  string
	bins map[string]string // package to binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func build(t testing.TB) (job string) { return goBuild(t, "crashjob", ".") }

// goBuild builds pkg into a binary called name, or returns the one built
// before.
func goBuild(t testing.TB, name, pkg string) string {
	built.Lock()
	defer built.Unlock()
	if bin, ok := built.bins[pkg]; ok {
		return bin
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "crashjob-bin")
		if err != nil {
			t.Fatal(err)
		}
		built.dir, built.bins = dir, map[string]string{}
	}
	bin := filepath.Join(built.dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	built.bins[pkg] = bin
	return bin
}

func keepLogs(t *testing.T, logs string) {
	ents, _ := os.ReadDir(logs)
	for _, e := range ents {
		t.Logf("%s (tail):\n%s", e.Name(), tail(filepath.Join(logs, e.Name()), 3000))
	}
}
