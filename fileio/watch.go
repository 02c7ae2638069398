package fileio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
)

// WatchURN is the URN of weir's native folder watch, the read side: a
// source that follows a folder and reads each new file once. Its payload
// is the JSON of WatchConfig. weir runs it itself (package filesource);
// other runners refuse the URN.
const WatchURN = "beam:transform:weir:file_watch:v1"

// Watch modes: what one element is.
const (
	// ModeFiles emits one element per file: a row of FileSchema (path,
	// size, modification time), as Beam's FileIO.match().continuously()
	// emits a file's metadata.
	ModeFiles = "files"
	// ModeLines emits one element per line of each file: KV<bytes, bytes>
	// of the file's path and the line without its line end, as Beam's
	// TextIO.watchForNewFiles (which drops the path).
	ModeLines = "lines"
)

// When a file found in the folder is ready to read.
const (
	// ReadyStable takes a file once its size and modification time are
	// the same at two polls in a row: a file still being written is left
	// until it stops changing. It costs one poll interval of latency.
	ReadyStable = "stable"
	// ReadyRenamed takes a file the first time it is listed: the writers
	// write elsewhere (or under a hidden name) and rename complete files
	// into place, so a listed file is complete.
	ReadyRenamed = "renamed"
)

// Where a file's event time comes from.
const (
	// TimeModified is the file's modification time.
	TimeModified = "modified"
	// TimeName is a time parsed from the file's name with NameLayout.
	TimeName = "name"
)

// Name layouts for epoch numbers rather than Go time layouts.
const (
	LayoutUnix      = "unix"        // seconds since the epoch
	LayoutUnixMilli = "unix_millis" // milliseconds since the epoch
)

// WatchConfig configures a folder watch. Durations are milliseconds, as
// in kafkaio's configurations. See docs/files.md, "Reading: following a
// folder".
type WatchConfig struct {
	// Dir is the folder to follow. Required; it may not exist yet (the
	// watch waits for it, with a job warning).
	Dir string `json:"dir"`
	// Pattern selects files by base name (path.Match syntax: *, ?, [a-z]);
	// default "*". Names starting with "." or "_" are never read: they are
	// files still being written under a hidden name (weir's file sink
	// writes ".part-...tmp") and markers such as _SUCCESS.
	Pattern string `json:"pattern,omitempty"`
	// Recursive follows the subfolders too (hidden ones excepted).
	Recursive bool `json:"recursive,omitempty"`
	// Mode is ModeFiles (default) or ModeLines.
	Mode string `json:"mode,omitempty"`
	// Ready is ReadyStable (default) or ReadyRenamed.
	Ready string `json:"ready,omitempty"`
	// PollIntervalMillis is how often the folder is listed; default 1000.
	PollIntervalMillis int64 `json:"poll_interval_millis,omitempty"`

	// Timestamp is TimeModified (default) or TimeName.
	Timestamp string `json:"timestamp,omitempty"`
	// NameLayout parses the time in a file's name (TimeName): a Go time
	// layout ("events-2006-01-02T15.json"; without a zone it is UTC), or
	// LayoutUnix or LayoutUnixMilli. Without NameRegexp it must match the
	// whole base name.
	NameLayout string `json:"name_layout,omitempty"`
	// NameRegexp, if set, picks the part of the base name NameLayout
	// parses: its group named "ts", or its only group. A name it does not
	// match is not read (counted, and named in a job warning).
	NameRegexp string `json:"name_regexp,omitempty"`

	// MaxOutOfOrdernessMillis bounds how far behind the newest file's time
	// a later file may be: the watermark is the newest time minus this.
	MaxOutOfOrdernessMillis int64 `json:"max_out_of_orderness_millis,omitempty"`
	// SplitByFolder gives each first-level subfolder of Dir (and Dir's own
	// files) a watermark of its own, as a Kafka partition has: the watch's
	// watermark is the minimum over them. Needs Recursive.
	SplitByFolder bool `json:"split_by_folder,omitempty"`
	// IdleTimeoutMillis: with SplitByFolder, a subfolder without a new
	// file this long leaves the minimum until its next file. 0: never.
	IdleTimeoutMillis int64 `json:"idle_timeout_millis,omitempty"`
	// RetentionMillis bounds the set of files the watch remembers (and
	// its checkpoints hold): a file whose time is this far behind the
	// watermark is forgotten. 0 (default): every file is remembered.
	RetentionMillis int64 `json:"retention_millis,omitempty"`

	// MaxFiles, StopAfterMillis and StopAfterIdleMillis make the watch
	// bounded: it ends, its watermark at +inf, after reading that many
	// files, after that long since it first started, or once no file has
	// been found for that long. 0 means no such bound.
	MaxFiles            int64 `json:"max_files,omitempty"`
	StopAfterMillis     int64 `json:"stop_after_millis,omitempty"`
	StopAfterIdleMillis int64 `json:"stop_after_idle_millis,omitempty"`
}

// Bounded reports whether the watch ends by itself.
func (c *WatchConfig) Bounded() bool {
	return c.MaxFiles > 0 || c.StopAfterMillis > 0 || c.StopAfterIdleMillis > 0
}

// Lines reports whether the watch emits lines rather than files.
func (c *WatchConfig) Lines() bool { return c.Mode == ModeLines }

// PollInterval returns the poll interval, with its default.
func (c *WatchConfig) PollInterval() time.Duration {
	if c.PollIntervalMillis <= 0 {
		return time.Second
	}
	return time.Duration(c.PollIntervalMillis) * time.Millisecond
}

// GlobPattern returns the pattern, with its default.
func (c *WatchConfig) GlobPattern() string {
	if c.Pattern == "" {
		return "*"
	}
	return c.Pattern
}

// Validate reports what is wrong with the configuration, every problem at
// once.
func (c *WatchConfig) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("no dir"))
	}
	if _, err := path.Match(c.GlobPattern(), ""); err != nil || strings.Contains(c.Pattern, "/") {
		errs = append(errs, fmt.Errorf("pattern %q is not a glob of base names (path.Match syntax, no /)", c.Pattern))
	}
	switch c.Mode {
	case "", ModeFiles, ModeLines:
	default:
		errs = append(errs, fmt.Errorf("unknown mode %q (want %q or %q)", c.Mode, ModeFiles, ModeLines))
	}
	switch c.Ready {
	case "", ReadyStable, ReadyRenamed:
	default:
		errs = append(errs, fmt.Errorf("unknown ready %q (want %q or %q)", c.Ready, ReadyStable, ReadyRenamed))
	}
	errs = append(errs, c.validateTimestamp()...)
	if c.SplitByFolder && !c.Recursive {
		errs = append(errs, errors.New("split_by_folder needs recursive"))
	}
	if c.IdleTimeoutMillis > 0 && !c.SplitByFolder {
		errs = append(errs, errors.New("idle_timeout_millis needs split_by_folder: a watch of one folder has one watermark, which idleness cannot move"))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"poll_interval_millis", c.PollIntervalMillis}, {"max_out_of_orderness_millis", c.MaxOutOfOrdernessMillis},
		{"idle_timeout_millis", c.IdleTimeoutMillis}, {"retention_millis", c.RetentionMillis},
		{"max_files", c.MaxFiles}, {"stop_after_millis", c.StopAfterMillis}, {"stop_after_idle_millis", c.StopAfterIdleMillis},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s is %d, must not be negative", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// validateTimestamp checks the timestamp policy and the name layout.
func (c *WatchConfig) validateTimestamp() []error {
	switch c.Timestamp {
	case "", TimeModified:
		if c.NameLayout != "" || c.NameRegexp != "" {
			return []error{fmt.Errorf("name_layout and name_regexp need timestamp %q", TimeName)}
		}
		return nil
	case TimeName:
	default:
		return []error{fmt.Errorf("unknown timestamp %q (want %q or %q)", c.Timestamp, TimeModified, TimeName)}
	}
	var errs []error
	switch c.NameLayout {
	case "":
		errs = append(errs, fmt.Errorf("timestamp %q needs name_layout", TimeName))
	case LayoutUnix, LayoutUnixMilli:
	default:
		// A layout with no element of time in it would parse every name
		// that equals it as the zero time.
		a := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		b := time.Date(2012, 11, 22, 17, 38, 49, 0, time.UTC)
		if a.Format(c.NameLayout) == b.Format(c.NameLayout) {
			errs = append(errs, fmt.Errorf("name_layout %q holds no element of a Go time layout (2006, 01, 02, 15, 04, 05...)", c.NameLayout))
		}
	}
	if c.NameRegexp != "" {
		if _, _, err := NameGroup(c.NameRegexp); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// NameGroup compiles a name_regexp and returns it with the index of the
// group that holds the time: the group named "ts", or the only group.
func NameGroup(expr string) (*regexp.Regexp, int, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, 0, fmt.Errorf("name_regexp: %w", err)
	}
	if i := re.SubexpIndex("ts"); i > 0 {
		return re, i, nil
	}
	if re.NumSubexp() != 1 {
		return nil, 0, fmt.Errorf("name_regexp %q has %d groups: want one, or one named ts", expr, re.NumSubexp())
	}
	return re, 1, nil
}

// DecodeWatch decodes and validates a WatchURN payload. Unknown fields are
// an error: a misspelt option would otherwise be ignored.
func DecodeWatch(payload []byte) (*WatchConfig, error) {
	var c WatchConfig
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("file watch payload: %w", err)
	}
	if dec.More() {
		return nil, errors.New("file watch payload: more than one JSON value")
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("file watch: %w", err)
	}
	return &c, nil
}

// FileMetadata is the element of a watch in ModeFiles: the Go form of a
// FileSchema row, which is how every SDK sees it.
type FileMetadata struct {
	// Path is the file's path: Dir joined with its path below Dir.
	Path string `beam:"path"`
	// SizeBytes is the file's size when it was read.
	SizeBytes int64 `beam:"size_bytes"`
	// LastModifiedMillis is its modification time, in ms since the epoch.
	LastModifiedMillis int64 `beam:"last_modified_millis"`
}

func init() {
	beam.RegisterType(reflect.TypeFor[FileMetadata]())
}

// kvBytes is the element type of a watch in ModeLines.
var kvBytes = typex.NewKV(typex.New(reflectx.ByteSlice), typex.New(reflectx.ByteSlice))

// Watch adds a native folder watch: a source that follows cfg.Dir and
// reads each new file matching cfg.Pattern once. In ModeFiles (the
// default) its output is a PCollection of FileMetadata, one per file; in
// ModeLines a PCollection of KV<[]byte, []byte>, (path, line) for each
// line of each file. Every element is in the global window at its file's
// time (TimeModified or TimeName). The watch is unbounded unless cfg sets
// MaxFiles, StopAfterMillis or StopAfterIdleMillis.
//
// The transform is a primitive with WatchURN and cfg as its JSON payload:
// weir runs it itself (package filesource), so no expansion service is
// involved. Other runners refuse it. An invalid cfg panics, as Beam's
// constructors do, naming what is wrong.
func Watch(s beam.Scope, cfg WatchConfig) beam.PCollection {
	s = s.Scope("fileio.Watch")
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("fileio.Watch: %v", err))
	}
	payload, err := json.Marshal(&cfg)
	if err != nil {
		panic(fmt.Sprintf("fileio.Watch: %v", err))
	}
	out := typex.New(reflect.TypeFor[FileMetadata]())
	if cfg.Lines() {
		out = kvBytes
	}
	return beam.External(s, WatchURN, payload, nil, []beam.FullType{out}, cfg.Bounded())[0]
}
