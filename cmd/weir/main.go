// Command weir is the weir runner's binary: a Beam job server and small
// clients for it.
//
//	weir serve  [--host=localhost] [--job-port=8099] [--staging-dir=DIR] [--expansion-port=-1]
//	            [--log-format=text|json] [--log-level=debug|info|warn|error] [--job-retention=1h]
//	            [--http-addr=localhost:8081] [--otlp-endpoint=HOST:PORT] [--metrics=true]
//	weir jobs   [--endpoint=localhost:8099]
//	weir cancel [--endpoint=localhost:8099] JOB
//	weir drain  [--endpoint=localhost:8099] JOB
//	weir checkpoints [--endpoint=localhost:8099] JOB
//	weir savepoint [--endpoint=localhost:8099] [--dir=DIR] [--stop] JOB
//	weir metrics [--endpoint=localhost:8099] [--all] JOB
//	weir messages [--endpoint=localhost:8099] [--follow] JOB
//	weir proxy  --endpoint=HOST:8099 [--listen=localhost:8098] [--expansion-endpoint=HOST:PORT]
//
// serve takes --tls-cert, --tls-key, --tls-client-ca, --auth-token-file
// and --insecure; every client command and proxy take --tls, --tls-ca,
// --tls-cert, --tls-key, --tls-server-name and --token-file, or the
// WEIR_TLS* and WEIR_TOKEN* environment variables (docs/security.md).
//
// This file only dispatches; each subcommand lives in its own file.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// subcommand runs one `weir <name>` with the arguments after the name.
type subcommand struct {
	name, summary string
	run           func(args []string, stdout io.Writer) error
}

var subcommands = []subcommand{
	{"serve", "run the job service until interrupted", serve},
	{"jobs", "list the jobs of a job service: state, start, duration, error", listJobs},
	{"cancel", "cancel a job", cancelJob},
	{"drain", "drain a job: stop its sources, fire every window, end DRAINED", drainJob},
	{"checkpoints", "show a job's checkpoint statistics", listCheckpoints},
	{"metrics", "show a job's metrics, committed and attempted (--all: with the SDKs' system metrics)", listMetrics},
	{"messages", "show a job's messages and state (--follow: until it ends)", showMessages},
	{"savepoint", "take a savepoint of a running job (--stop: then stop it)", takeSavepoint},
	{"proxy", "forward Beam SDKs' plaintext calls on loopback to a weir serve that requires TLS or a token", runProxy},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	for _, c := range subcommands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errReported):
			return 2
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "weir %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "weir %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "weir: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// errUsage marks bad command lines, which exit with status 2.
var errUsage = errors.New("usage")

// errReported is a usage error the flag package has already printed.
var errReported = fmt.Errorf("%w: already reported", errUsage)

func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: weir <command> [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range subcommands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'weir <command> -h' for a command's flags.")
}

// newFlagSet returns a flag set for a subcommand that reports errors instead
// of exiting, so run decides the exit status.
func newFlagSet(name, argsUsage string) *flag.FlagSet {
	fs := flag.NewFlagSet("weir "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: weir %s [flags]", name)
		if argsUsage != "" {
			fmt.Fprintf(fs.Output(), " %s", argsUsage)
		}
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args. The flag package prints its own errors and the
// usage, so they are not printed again.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errReported
	}
	return nil
}
