package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/weir-runner/weir/runner"
)

// confineFlags are weir serve's flags that confine what a job may make
// the server do (docs/security.md). A server refuses PROCESS environments
// unless told otherwise; the rest is off until set.
type confineFlags struct {
	allowProcess    bool
	processCommands listFlag
	allowedDirs     listFlag
	maxStagedPerJob int64
	maxStaged       int64
	maxJobs         int
	maxRequest      int
}

func (c *confineFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.allowProcess, "allow-process-environments", false, "run the command of any job's PROCESS environment on this machine; without it only those of --allow-process-command run, and other jobs with PROCESS environments are refused at submission")
	fs.Var(&c.processCommands, "allow-process-command", "a command, exact executable path, that PROCESS environments may run (repeatable, or comma-separated)")
	fs.Var(&c.allowedDirs, "allowed-dirs", "folders (comma-separated, repeatable) every path a job names must lie in, after symbolic links: its options of kind path (docs/options.md) and its file writes' folders; the state dir is always allowed (default: any path)")
	fs.Int64Var(&c.maxStagedPerJob, "max-staged-bytes-per-job", 0, "bytes one job's staged artifacts may take (0: unlimited)")
	fs.Int64Var(&c.maxStaged, "max-staged-bytes", 0, "bytes the staged artifacts of every prepared and running job may take at once (0: unlimited)")
	fs.IntVar(&c.maxJobs, "max-concurrent-jobs", 0, "jobs that may run at once; Run refuses one more with RESOURCE_EXHAUSTED (0: unlimited)")
	fs.IntVar(&c.maxRequest, "max-request-bytes", 0, "bytes of the largest gRPC message the server takes, such as a Prepare's pipeline (0: 2 GiB - 1, gRPC's most)")
}

// confinement is what the flags ask for. stateDir is the server's state
// dir as given ("" for the default), which stays allowed.
func (c *confineFlags) confinement(stateDir string) (runner.Confinement, error) {
	for _, l := range []struct {
		name string
		v    int64
	}{{"max-staged-bytes-per-job", c.maxStagedPerJob}, {"max-staged-bytes", c.maxStaged},
		{"max-concurrent-jobs", int64(c.maxJobs)}, {"max-request-bytes", int64(c.maxRequest)}} {
		if l.v < 0 {
			return runner.Confinement{}, usageErrorf("--%s=%d: want 0 (unlimited) or more", l.name, l.v)
		}
	}
	if c.maxRequest > math.MaxInt32 {
		return runner.Confinement{}, usageErrorf("--max-request-bytes=%d: gRPC takes at most %d", c.maxRequest, math.MaxInt32)
	}
	conf := runner.Confinement{
		RestrictProcess:        !c.allowProcess,
		AllowedProcessCommands: c.processCommands,
		MaxStagedBytesPerJob:   c.maxStagedPerJob,
		MaxStagedBytes:         c.maxStaged,
		MaxConcurrentJobs:      c.maxJobs,
		MaxRequestBytes:        c.maxRequest,
	}
	for _, cmd := range c.processCommands {
		if !filepath.IsAbs(cmd) {
			return runner.Confinement{}, usageErrorf("--allow-process-command=%s: want an absolute path", cmd)
		}
	}
	if len(c.allowedDirs) > 0 {
		if stateDir == "" {
			// The executor's default (runner.LocalExecutor).
			stateDir = filepath.Join(os.TempDir(), "weir")
		}
		conf.AllowedDirs = append([]string{}, c.allowedDirs...)
		conf.AllowedDirs = append(conf.AllowedDirs, stateDir)
	}
	return conf, nil
}

// listFlag is a flag.Value of strings, given comma-separated, repeated, or
// both.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	if len(*l) == 0 {
		return fmt.Errorf("want one or more, comma-separated")
	}
	return nil
}
