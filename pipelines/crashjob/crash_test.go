package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/internal/kafkatest"
)

// The crash test of issue 7: a job reading Kafka (kfake as its own
// process) into one-minute event-time windows and an exactly-once sink is
// killed with SIGKILL at random moments while its input is produced, and
// started again each time with the same name and checkpoint folder. The
// sink's output must equal the expected window sums exactly: nothing lost,
// nothing doubled.

const (
	partitions = 3
	perPart    = 400 // records per partition, one second of event time apart
	keys       = 5
	kills      = 10
)

// The Kafka sink's test runs on kfake (its own process) and on the real
// broker internal/tools/kafka.sh starts (kafkatest: WEIR_KAFKA_BROKERS);
// the file sink's on kfake.
func TestCrashExactlyOnceKafka(t *testing.T) {
	t.Run(kafkatest.KindFake, func(t *testing.T) { crashTest(t, "kafka", startKfake) })
	t.Run(kafkatest.KindReal, func(t *testing.T) { crashTest(t, "kafka", kafkatest.Real) })
}
func TestCrashExactlyOnceFiles(t *testing.T) { crashTest(t, "file", startKfake) }

func crashTest(t *testing.T, sink string, broker func(testing.TB) *kafkatest.Broker) {
	if testing.Short() {
		t.Skip("builds and kills a job many times")
	}
	dir := t.TempDir()
	b := broker(t)
	job := build(t)
	brokers := b.String()
	// Topics are made here, not on first use: a real broker, like
	// production ones, does not create them.
	in, out := b.Topic(t, "in", partitions), b.Topic(t, "out", partitions)

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := expected(t0)
	produced := make(chan error, 1)
	go func() { produced <- produce(brokers, in, t0, rng.Int63()) }()

	args := []string{
		"--runner=weir", "--job_name=crashjob-" + sink, "--brokers=" + brokers, "--in_topic=" + in,
		"--transactional_id=" + b.Name(t, "crashjob"),
		"--weir_checkpoint_interval=200ms",
		"--weir_checkpoint_dir=" + filepath.Join(dir, "checkpoints"),
	}
	outDir := filepath.Join(dir, "out")
	if sink == "file" {
		args = append(args, "--out_dir="+outDir)
	} else {
		args = append(args, "--out_topic="+out)
	}
	logs := filepath.Join(dir, "logs")
	if d := os.Getenv("CRASHJOB_LOGS"); d != "" { // keep the logs after the test
		logs = filepath.Join(d, sink+"-"+b.Kind)
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range kills {
		p := start(t, job, args, filepath.Join(logs, fmt.Sprintf("run-%d.log", i)))
		wait := time.Duration(500+rng.Intn(2500)) * time.Millisecond
		time.Sleep(wait)
		kill(p)
		t.Logf("run %d killed after %v", i, wait)
	}
	if err := <-produced; err != nil {
		t.Fatalf("producing the input: %v", err)
	}
	final := start(t, job, args, filepath.Join(logs, "final.log"))
	defer kill(final)

	read := func() ([]string, error) {
		if sink == "file" {
			return readFiles(outDir)
		}
		return readTopic(brokers, out)
	}
	var got []string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var err error
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
	got, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if diff := compare(got, want); diff != "" {
		t.Errorf("output after %d kills differs from the expected window sums (logs in %s):\n%s", kills, logs, diff)
		keepLogs(t, logs)
	}
	t.Logf("%s sink on %s: %d kills, %d records in, %d window sums out, each once", sink, b.Kind, kills,
		partitions*perPart, len(got))
}

// expected is the sum of every key in every one-minute window.
func expected(t0 time.Time) map[string]int {
	sums := map[string]int{}
	for p := range partitions {
		for i := range perPart {
			k, n, ts := record(p, i, t0)
			win := ts.Truncate(time.Minute)
			sums[fmt.Sprintf("%s|%d", k, win.UnixMilli())] += n
		}
	}
	return sums
}

func record(p, i int, t0 time.Time) (key string, n int, ts time.Time) {
	return fmt.Sprintf("k%d", (i+p)%keys), i%7 + 1, t0.Add(time.Duration(i) * time.Second)
}

// produce writes the input in small batches over about 20 seconds, so the
// kills fall while the job is reading, then one marker per partition an
// hour of event time later to close every window.
func produce(brokers, topic string, t0 time.Time, seed int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	const batch = 20
	for i := 0; i < perPart; i += batch {
		var recs []*kgo.Record
		for p := range partitions {
			for j := i; j < min(i+batch, perPart); j++ {
				k, n, ts := record(p, j, t0)
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Timestamp: ts,
					Key: []byte(k), Value: fmt.Appendf(nil, "%s,%d", k, n)})
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
		time.Sleep(time.Duration(500+rng.Intn(1000)) * time.Millisecond)
	}
	var marks []*kgo.Record
	for p := range partitions {
		marks = append(marks, &kgo.Record{Topic: topic, Partition: int32(p), Timestamp: t0.Add(time.Hour), Value: []byte("end")})
	}
	return cl.ProduceSync(ctx, marks...).FirstErr()
}

func compare(got []string, want map[string]int) string {
	seen := map[string]int{}
	var b strings.Builder
	for _, line := range got {
		seen[line]++
	}
	var lines []string
	for k, sum := range want {
		line := fmt.Sprintf("%s|%d", k, sum)
		switch n := seen[line]; {
		case n == 0:
			lines = append(lines, "missing "+line)
		case n > 1:
			lines = append(lines, fmt.Sprintf("%d times %s", n, line))
		}
		delete(seen, line)
	}
	for line, n := range seen {
		lines = append(lines, fmt.Sprintf("unexpected (%d times) %s", n, line))
	}
	sort.Strings(lines)
	for i, l := range lines {
		if i == 40 {
			fmt.Fprintf(&b, "... and %d more\n", len(lines)-i)
			break
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

func readTopic(brokers, topic string) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		if errs := fs.Errors(); len(errs) > 0 {
			if errors.Is(errs[0].Err, context.DeadlineExceeded) {
				return out, nil
			}
			// The topic does not exist until the first commit.
			if strings.Contains(errs[0].Err.Error(), "UNKNOWN_TOPIC") {
				return out, nil
			}
			return nil, fmt.Errorf("reading %s: %w", topic, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
}

// readFiles reads the lines of every visible file; hidden ones are the
// sink's temporary files.
func readFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if sc.Text() != "" {
				out = append(out, sc.Text())
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
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

// startKfake runs kfake as its own process, so that killing the job
// cannot take the broker with it, and returns it.
func startKfake(t testing.TB) *kafkatest.Broker {
	bin := goBuild(t, "kfake", "../../internal/tools/kfake")
	cmd := exec.Command(bin, "--port=0", fmt.Sprintf("--partitions=%d", partitions))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "kfake: bootstrap servers ")
	if !ok {
		t.Fatalf("kfake printed %q", line)
	}
	return &kafkatest.Broker{Kind: kafkatest.KindFake, Addrs: strings.Split(addr, ",")}
}

func start(t *testing.T, bin string, args []string, logFile string) *os.Process {
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process
}

// kill sends SIGKILL to the job's whole process group.
func kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

func keepLogs(t *testing.T, logs string) {
	ents, _ := os.ReadDir(logs)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(logs, e.Name()))
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("%s (tail):\n%s", e.Name(), b)
	}
}
