package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// logFlags are weir serve's --log-format and --log-level, which build the
// server's logger. A bad value is refused by the flag package, which
// names the flag, so it is a usage error (exit 2).
type logFlags struct {
	format logFormat
	level  logLevel
}

func (l *logFlags) register(fs *flag.FlagSet) {
	l.format, l.level = "text", logLevel(slog.LevelInfo)
	fs.Var(&l.format, "log-format", "format of the server's log on stderr: text (key=value) or json (one object a line)")
	fs.Var(&l.level, "log-level", "least level of the server's log: debug, info, warn or error")
}

// logger returns the logger the flags ask for, writing to w.
func (l *logFlags) logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.Level(l.level)}
	if l.format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// logFormat is a flag.Value: text or json.
type logFormat string

func (f *logFormat) String() string { return string(*f) }

func (f *logFormat) Set(s string) error {
	switch s {
	case "text", "json":
		*f = logFormat(s)
		return nil
	}
	return fmt.Errorf("want text or json")
}

// logLevel is a flag.Value: one of slog's four levels by name. Unlike
// slog.Level's own parsing it takes no offsets (info+2): an operator
// picks one of four.
type logLevel slog.Level

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

func (l *logLevel) String() string { return strings.ToLower(slog.Level(*l).String()) }

func (l *logLevel) Set(s string) error {
	v, ok := logLevels[strings.ToLower(s)]
	if !ok {
		return fmt.Errorf("want debug, info, warn or error")
	}
	*l = logLevel(v)
	return nil
}
