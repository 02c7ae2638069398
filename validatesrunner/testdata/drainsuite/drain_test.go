// Package drainsuite is a stand-in for Beam tests whose job never ends by
// itself, used by drain_test.go: each test submits a job to the job server
// (harness_test's fake JobService) under the name test/integration gives
// it, then waits for the job to end, as the Go SDK's universal runner does.
package drainsuite

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

var (
	endpoint = flag.String("endpoint", "", "job server")
	_        = flag.String("runner", "", "runner")
	_        = flag.String("environment_type", "", "environment")
)

// runUntilEnd submits a job named go-<test>-7 and waits for a terminal
// state, which only a drain from outside brings.
func runUntilEnd(t *testing.T) jobpb.JobState_Enum {
	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := jobpb.NewJobServiceClient(conn)
	ctx := context.Background()
	run, err := c.Run(ctx, &jobpb.RunJobRequest{PreparationId: "go-" + strings.ToLower(t.Name()) + "-7"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := c.GetState(ctx, &jobpb.GetJobStateRequest{JobId: run.GetJobId()})
		if err != nil {
			t.Fatal(err)
		}
		switch st.GetState() {
		case jobpb.JobState_DONE, jobpb.JobState_DRAINED, jobpb.JobState_CANCELLED, jobpb.JobState_FAILED:
			return st.GetState()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDrained(t *testing.T) {
	if st := runUntilEnd(t); st != jobpb.JobState_DRAINED {
		t.Fatalf("job ended %v", st)
	}
}

// TestRefused's job is refused the drain: it never ends.
func TestRefused(t *testing.T) { runUntilEnd(t) }

// TestAfter runs in the process started after TestRefused's was stopped.
func TestAfter(t *testing.T) {}
