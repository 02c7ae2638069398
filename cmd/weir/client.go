package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
)

// clientFlags are the flags every client subcommand shares.
type clientFlags struct {
	endpoint string
	timeout  time.Duration
	security clientSecurityFlags // security.go
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.endpoint, "endpoint", "localhost:8099", "job service endpoint (host:port)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "how long to wait for the job service")
	c.security.register(fs)
}

// dial connects to the job service, with the TLS and token the flags and
// environment give. The caller closes the connection and cancels the
// context.
func (c *clientFlags) dial() (jobpb.JobServiceClient, *grpc.ClientConn, context.Context, context.CancelFunc, error) {
	cl, err := c.security.client()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	opts, err := cl.DialOptions(c.endpoint)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("job service %s: %w", c.endpoint, err)
	}
	conn, err := grpc.NewClient(c.endpoint, opts...)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("job service %s: %w", c.endpoint, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	return jobpb.NewJobServiceClient(conn), conn, ctx, cancel, nil
}

// cancelJob asks the service to cancel one job and prints the state it
// reports, usually CANCELLING.
func cancelJob(args []string, stdout io.Writer) error {
	return stopJob("cancel", args, stdout, func(ctx context.Context, c jobpb.JobServiceClient, id string) (jobpb.JobState_Enum, error) {
		resp, err := c.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id})
		return resp.GetState(), err
	})
}

// drainJob asks the service to drain one job and prints the state it
// reports, usually DRAINING: the job's sources stop, its restrictions are
// truncated, every window fires, and it ends DRAINED.
func drainJob(args []string, stdout io.Writer) error {
	return stopJob("drain", args, stdout, func(ctx context.Context, c jobpb.JobServiceClient, id string) (jobpb.JobState_Enum, error) {
		resp, err := c.Drain(ctx, &jobpb.DrainJobRequest{JobId: id})
		return resp.GetState(), err
	})
}

func stopJob(verb string, args []string, stdout io.Writer, call func(context.Context, jobpb.JobServiceClient, string) (jobpb.JobState_Enum, error)) error {
	return onJob(verb, args, func(ctx context.Context, client jobpb.JobServiceClient, id, endpoint string) error {
		st, err := call(ctx, client, id)
		if err != nil {
			return fmt.Errorf("%s job %s on %s: %w", verb, id, endpoint, err)
		}
		fmt.Fprintf(stdout, "%s\t%s\n", id, st)
		return nil
	})
}

// onJob parses the flags and the one job id of a command about a job,
// dials the job service and runs do.
func onJob(verb string, args []string, do func(ctx context.Context, client jobpb.JobServiceClient, id, endpoint string) error) error {
	return onJobWith(verb, args, nil, do)
}

// onJobWith is onJob for a command with flags of its own, which flags
// registers (nil: none).
func onJobWith(verb string, args []string, flags func(*flag.FlagSet), do func(ctx context.Context, client jobpb.JobServiceClient, id, endpoint string) error) error {
	fs := newFlagSet(verb, "JOB")
	var cf clientFlags
	cf.register(fs)
	if flags != nil {
		flags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("want exactly one job id, got %d arguments", fs.NArg())
	}
	client, conn, ctx, cancel, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	defer cancel()
	return do(ctx, client, fs.Arg(0), cf.endpoint)
}
