package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/weir-runner/weir/runner"
)

// TestMessagesCommand: without --follow, weir messages prints what a
// running job has said and its state, and exits; with --follow it prints
// what comes after, until the job ends.
func TestMessagesCommand(t *testing.T) {
	more := make(chan struct{})
	said := make(chan struct{})
	s, endpoint := startTestServer(t, func(ctx context.Context, j *runner.Job) error {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "first")
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "watch out:\nsecond line")
		close(said)
		<-more
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_ERROR, "last")
		return nil
	})
	id := submit(t, s, "talky")
	<-said

	var out, errOut bytes.Buffer
	if code := runMain(&out, &errOut, "messages", endpoint, id); code != 0 {
		t.Fatalf("messages: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[0], "  BASIC    first") ||
		!strings.HasSuffix(lines[1], "  WARNING  watch out:") || lines[2] != "second line" ||
		!strings.HasSuffix(lines[3], "  STATE    RUNNING") {
		t.Fatalf("output:\n%s", out.String())
	}

	// --follow: once it has printed the state, the job says more and ends.
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := runMain(pw, &errOut, "messages", "--follow", endpoint, id)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	var followed []string
	for sc.Scan() {
		followed = append(followed, sc.Text())
		if strings.HasSuffix(sc.Text(), "STATE    RUNNING") {
			close(more)
		}
	}
	if code := <-done; code != 0 {
		t.Fatalf("messages --follow: exit %d: %s", code, errOut.String())
	}
	if len(followed) != 6 || !strings.HasSuffix(followed[4], "  ERROR    last") || !strings.HasSuffix(followed[5], "  STATE    DONE") {
		t.Errorf("followed:\n%s", strings.Join(followed, "\n"))
	}

	errOut.Reset()
	if code := runMain(io.Discard, &errOut, "messages", endpoint, "no-such-job"); code != 1 || !strings.Contains(errOut.String(), "NotFound") {
		t.Errorf("messages of an unknown job: exit %d, %q", code, errOut.String())
	}
}

func TestFmtMessageTime(t *testing.T) {
	for in, want := range map[string]string{
		"2026-12-02T10:15:30.123456789+01:00": "2026-12-02T09:15:30.123Z",
		"2026-12-02T09:15:30Z":                "2026-12-02T09:15:30.000Z",
		"yesterday":                           "yesterday",
	} {
		if got := fmtMessageTime(in); got != want {
			t.Errorf("fmtMessageTime(%q) = %q, want %q", in, got, want)
		}
	}
}
