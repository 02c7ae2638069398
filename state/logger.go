package state

import (
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger is the store's Pebble logger. Pebble calls Fatalf where it
// cannot go on, disk errors among them: a MANIFEST it cannot write or
// sync after a flush, a compaction or an ingestion (a full disk),
// corruption found while reading. Its default logger then calls os.Exit,
// which would end `weir serve` and every job in it over one job's disk.
// A store is one job's scratch space, rebuilt from the job's last
// checkpoint, so Fatalf fails the store instead: every later write
// returns the failure and the job fails with it, naming the folder.
//
// Pebble goes on after Fatalf along its error path (logAndApply returns
// the error without installing the version it could not log, so reads
// still see the last consistent one); nothing reuses a failed store's
// files.
type pebbleLogger struct{ s *Store }

func (l pebbleLogger) Infof(format string, args ...any) {
	pebble.DefaultLogger.Infof(format, args...)
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	pebble.DefaultLogger.Errorf(format, args...)
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	err := &fatalError{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if e, ok := a.(error); ok {
			err.cause = e // so that errors.Is finds the disk's error
			break
		}
	}
	// Pebble retries a failed flush, so this may be logged more than
	// once; the job's error holds the first.
	slog.Error("state: the store failed", "dir", l.s.dir, "err", err.msg)
	l.s.fail(err)
}

// fatalError is what Pebble reported through Fatalf, with the first
// error among its arguments as the cause.
type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.cause }
