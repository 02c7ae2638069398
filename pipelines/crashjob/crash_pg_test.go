package main

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weir-runner/weir/internal/pgtest"
)

// TestCrashExactlyOncePostgres is the crash test (crash_test.go) with the
// PostgreSQL sink: the window sums go, by plain INSERT, into a table
// without a key, so a window written twice shows as two rows and one
// lost as none. After the kills the table must equal the expected window
// sums exactly. It needs the server of `make postgres` (pgtest).
func TestCrashExactlyOncePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a job many times")
	}
	db := pgtest.New(t)
	db.Exec(t, `CREATE TABLE window_sums (key text NOT NULL, window_start bigint NOT NULL, sum bigint NOT NULL)`)
	dir := t.TempDir()
	began := time.Now()
	b := startKfake(t)
	job := build(t)
	brokers := b.String()
	in := b.Topic(t, "in", partitions)
	t.Logf("built in %v", time.Since(began).Round(time.Second))

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := expected(t0)
	produced := make(chan error, 1)
	go func() { produced <- produce(brokers, in, t0, rng.Int63()) }()

	args := []string{
		"--runner=weir", "--job_name=crashjob-postgres", "--brokers=" + brokers, "--in_topic=" + in,
		"--weir_checkpoint_interval=200ms",
		"--weir_checkpoint_dir=" + filepath.Join(dir, "checkpoints"),
		"--pg=" + db.URL, "--pg_table=window_sums",
	}
	logs := filepath.Join(dir, "logs")
	if d := os.Getenv("CRASHJOB_LOGS"); d != "" { // keep the logs after the test
		logs = filepath.Join(d, "postgres")
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
	restarted := time.Now()

	const q = `SELECT key || '|' || window_start || '|' || sum FROM window_sums`
	var got []string
	for deadline := time.Now().Add(3 * time.Minute); len(got) < len(want) && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		got = db.Strings(t, q)
	}
	t.Logf("the last run wrote the table's %d rows in %v", len(got), time.Since(restarted).Round(100*time.Millisecond))
	// Let a few more checkpoints complete, so that a duplicate the restored
	// job would commit has the chance to show.
	time.Sleep(2 * time.Second)
	got = db.Strings(t, q)
	if diff := compare(got, want); diff != "" {
		t.Errorf("table after %d kills differs from the expected window sums (logs in %s):\n%s", kills, logs, diff)
		keepLogs(t, logs)
	}
	runs := db.Strings(t, `SELECT count(DISTINCT run) FROM weir_sink_markers`)
	t.Logf("%d kills, %d records in, %d rows in the table for %d windows; %s runs left markers", kills, partitions*perPart, len(got), len(want), runs[0])
}
