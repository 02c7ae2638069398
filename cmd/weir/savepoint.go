package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/weir-runner/weir/runner"
)

// takeSavepoint asks the job service for a savepoint of a running job and
// prints its folder. With --stop the job then stops (CANCELLED), once its
// sinks have committed the savepoint; start it again from the folder with
// --weir_savepoint.
func takeSavepoint(args []string, stdout io.Writer) error {
	fs := newFlagSet("savepoint", "JOB")
	var cf clientFlags
	cf.register(fs)
	// A savepoint waits for the barrier to pass the whole job: allow more
	// than the other commands' default.
	fs.Lookup("timeout").DefValue = "10m0s"
	cf.timeout = 10 * time.Minute
	dir := fs.String("dir", "", "folder to put the savepoint in; default: savepoints beside the job's checkpoint folder")
	stop := fs.Bool("stop", false, "stop the job once the savepoint is taken and its sinks committed it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("want exactly one job id, got %d arguments", fs.NArg())
	}
	if *dir != "" {
		// The server resolves paths against its own working folder; a
		// relative --dir means this one, as the user typed it here.
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return usageErrorf("--dir %q: %v", *dir, err)
		}
		*dir = abs
	}
	_, conn, ctx, cancel, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	defer cancel()
	id := fs.Arg(0)
	res, err := runner.TakeSavepoint(ctx, conn, runner.SavepointRequest{JobID: id, Dir: *dir, Stop: *stop})
	if err != nil {
		return fmt.Errorf("savepoint of job %s on %s: %w", id, cf.endpoint, err)
	}
	fmt.Fprintf(stdout, "%s\n", res.Path)
	return nil
}
