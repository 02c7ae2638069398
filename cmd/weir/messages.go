package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

// showMessages prints a job's messages from Beam's GetMessageStream, one
// line each: time, importance, text; and its state, as a line of
// importance STATE.
//
// Without --follow it prints what the job has and exits. Beam's stream
// has no end of backlog, but weir's sends, first, every message the job
// keeps and then its current state (runner.Server.GetMessageStream): the
// first state is that end. So the command needs no call of weir's own and
// never waits on a job that is quiet. With --follow it reads on until the
// job is terminal (the stream ends), or until interrupted; --timeout then
// bounds nothing, a job may run for days.
func showMessages(args []string, stdout io.Writer) error {
	var follow *bool
	flags := func(fs *flag.FlagSet) {
		follow = fs.Bool("follow", false, "keep printing messages and states until the job ends")
	}
	return onJobWith("messages", args, flags, func(ctx context.Context, client jobpb.JobServiceClient, id, endpoint string) error {
		if *follow {
			var stop context.CancelFunc
			ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
		}
		err := readMessages(ctx, client, id, *follow, stdout)
		if err != nil && !(*follow && errors.Is(ctx.Err(), context.Canceled)) {
			return fmt.Errorf("messages of job %s on %s: %w", id, endpoint, err)
		}
		return nil
	})
}

// readMessages prints the stream of job id until its first state (or, to
// follow, until its end).
func readMessages(ctx context.Context, client jobpb.JobServiceClient, id string, follow bool, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream when not following it to its end
	stream, err := client.GetMessageStream(ctx, &jobpb.JobMessagesRequest{JobId: id})
	if err != nil {
		return err
	}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if m := resp.GetMessageResponse(); m != nil {
			imp := strings.TrimPrefix(m.GetImportance().String(), "JOB_MESSAGE_")
			fmt.Fprintf(w, "%s  %-8s %s\n", fmtMessageTime(m.GetTime()), imp, m.GetMessageText())
		}
		if st := resp.GetStateResponse(); st != nil {
			fmt.Fprintf(w, "%s  %-8s %s\n", st.GetTimestamp().AsTime().UTC().Format(messageTime), "STATE", st.GetState())
			if !follow {
				return nil
			}
		}
	}
}

// messageTime is the time of a message line: UTC, to the millisecond.
const messageTime = "2006-01-02T15:04:05.000Z07:00"

// fmtMessageTime reformats a message's time (RFC 3339 text, as weir and
// Beam's job servers send it); text it cannot read is printed as it is.
func fmtMessageTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format(messageTime)
}
