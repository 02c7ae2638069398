package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"sync"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/runner"
)

// parseLogFlags parses args as weir serve's log flags would be.
func parseLogFlags(t *testing.T, args ...string) (*logFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var lf logFlags
	lf.register(fs)
	return &lf, fs.Parse(args)
}

// TestLogFlagsJSON: with --log-format=json a server's log is JSON lines,
// a job's records among them with its ID and name.
func TestLogFlagsJSON(t *testing.T) {
	lf, err := parseLogFlags(t, "--log-format=json", "--log-level=debug")
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer // the job's goroutine writes too
	s := runner.NewServer(runner.ExecutorFunc(func(ctx context.Context, j *runner.Job) error { return nil }),
		runner.ServerOptions{StagingRoot: t.TempDir(), Logger: lf.logger(&buf)})
	t.Cleanup(func() { s.Stop(context.Background()) })
	prep, err := s.Prepare(t.Context(), &jobpb.PrepareJobRequest{Pipeline: &pipepb.Pipeline{}, JobName: "logged"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.Run(t.Context(), &jobpb.RunJobRequest{PreparationId: prep.GetPreparationId()})
	if err != nil {
		t.Fatal(err)
	}
	// Stop waits for the job's goroutine, so its last record is written.
	waitTerminal(t, s.Job(runner.JobID(run.GetJobId())))
	s.Stop(context.Background())

	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if rec["job"] == run.GetJobId() && rec["job_name"] == "logged" {
			msgs = append(msgs, rec["msg"].(string))
		}
	}
	if want := "weir: job submitted|weir: job running|weir: job ended"; strings.Join(msgs, "|") != want {
		t.Errorf("the job's records %q, want %q", msgs, want)
	}
}

// waitTerminal waits on a job's updates until it is terminal.
func waitTerminal(t *testing.T, j *runner.Job) {
	t.Helper()
	for {
		_, st, changed := j.Updates(0)
		if runner.IsTerminal(st) {
			return
		}
		select {
		case <-changed:
		case <-t.Context().Done():
			t.Fatal("the job never ended")
		}
	}
}

func TestLogFlags(t *testing.T) {
	tests := []struct {
		args        []string
		wantErr     string
		debug, warn bool // whether records at these levels pass
		wantJSON    bool
		wantLevel   string
	}{
		{args: nil, warn: true, wantLevel: "info"},
		{args: []string{"--log-level=debug"}, debug: true, warn: true, wantLevel: "debug"},
		{args: []string{"--log-level=ERROR"}, wantLevel: "error"},
		{args: []string{"--log-format=json", "--log-level=warn"}, warn: true, wantJSON: true, wantLevel: "warn"},
		{args: []string{"--log-format=xml"}, wantErr: "-log-format"},
		{args: []string{"--log-level=info+2"}, wantErr: "-log-level"},
		{args: []string{"--log-level=verbose"}, wantErr: "-log-level"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			lf, err := parseLogFlags(t, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := lf.level.String(); got != tt.wantLevel {
				t.Errorf("level %q, want %q", got, tt.wantLevel)
			}
			var buf bytes.Buffer
			log := lf.logger(&buf)
			log.Debug("dbg")
			log.Warn("wrn", "k", 1)
			out := buf.String()
			if strings.Contains(out, "dbg") != tt.debug || strings.Contains(out, "wrn") != tt.warn {
				t.Errorf("output %q, want debug %v, warn %v", out, tt.debug, tt.warn)
			}
			if tt.warn && strings.HasPrefix(out, "{") != tt.wantJSON {
				t.Errorf("output %q, want JSON %v", out, tt.wantJSON)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
