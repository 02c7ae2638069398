package executor

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/metrics"
	"github.com/weir-runner/weir/triggers"
	"github.com/weir-runner/weir/wire"
)

// MetricsNamespace is the namespace of the metrics weir reports itself.
const MetricsNamespace = "weir"

// The names of the per-transform metrics a group-by-key reports (see README).
const (
	MetricDroppedLate   = "dropped_late_elements"
	MetricDroppedClosed = "dropped_closed_window_elements"
	MetricArrivalDelay  = "arrival_delay_ms" // distribution; gauges add _p50 … _max
)

// arrivalQuantiles are the arrival-delay gauges: name suffix and quantile.
var arrivalQuantiles = []struct {
	suffix string
	q      float64
}{{"_p50", 0.5}, {"_p90", 0.9}, {"_p99", 0.99}, {"_p999", 0.999}, {"_max", 1}}

// LateData is a job's account of data its group-by-keys receive late: the
// arrival delay of every element (processing time minus event time), and
// every element dropped because its window had expired or its trigger had
// finished. A drop is never silent: it is counted per transform, logged at
// a bounded rate, and, when DeadLetter is set, written there as one JSON
// line. One LateData serves every subtask of the job; it is safe for
// concurrent use. Set the fields before the first use.
type LateData struct {
	// Logf writes a warning about transform t (a job message, and a
	// record of the server's log that names t).
	Logf func(t *TransformLate, format string, args ...any)
	// DeadLetter, if not nil, receives one JSON line per dropped element.
	DeadLetter io.Writer
	// LogEvery bounds the messages about drops to one per transform per
	// period; default 10 s.
	LogEvery time.Duration
	// Now reads the wall clock; nil means time.Now.
	Now func() time.Time

	mu         sync.Mutex // guards the fields below
	transforms map[string]*TransformLate
	order      []*TransformLate
	dl         *bufio.Writer
	dlErr      error
}

// TransformLate is one transform's part of a LateData.
type TransformLate struct {
	ID, Name string
	// Arrivals is the distribution of arrival delays in milliseconds.
	Arrivals metrics.Histogram

	owner                      *LateData
	source                     bool // a source: arrivals only, it drops nothing
	droppedLate, droppedClosed atomic.Int64

	mu       sync.Mutex // guards the log bookkeeping below
	lastLog  time.Time
	unlogged int64
	lastMsg  string
}

// Transform returns the account of the transform with id and name,
// creating it on first use.
func (l *LateData) Transform(id, name string) *TransformLate {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.transforms == nil {
		l.transforms = map[string]*TransformLate{}
	}
	t := l.transforms[id]
	if t == nil {
		t = &TransformLate{ID: id, Name: name, owner: l}
		l.transforms[id] = t
		l.order = append(l.order, t)
	}
	return t
}

// Source returns the account of a source transform, which records only
// arrival delays: what it emits is where event time enters the job.
func (l *LateData) Source(id, name string) *TransformLate {
	t := l.Transform(id, name)
	// Under the lock: job metrics may be read while the graph is built.
	l.mu.Lock()
	t.source = true
	l.mu.Unlock()
	return t
}

func (l *LateData) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// DropReason says why an element was dropped.
type DropReason string

const (
	// DropLate: the element's window had expired (the input watermark had
	// passed its end plus the allowed lateness).
	DropLate DropReason = "late"
	// DropClosed: the element's window was open but its trigger had
	// finished, so it can never fire again.
	DropClosed DropReason = "closed"
)

// Dropped describes a dropped element. Its slices are only read during the
// call to Drop.
type Dropped struct {
	Reason          DropReason
	Window          []byte // the window's encoding
	Timestamp       mtime.Time
	Pane            []byte // the element's pane, encoded
	Key, Value      []byte // encoded
	Watermark       mtime.Time
	AllowedLateness mtime.Time
}

// deadLetter is one line of the dead-letter file.
type deadLetter struct {
	Transform   string     `json:"transform"`
	TransformID string     `json:"transform_id"`
	Reason      DropReason `json:"reason"`
	Window      jsonWindow `json:"window"`
	TimestampMS int64      `json:"timestamp_ms"`
	Timestamp   string     `json:"timestamp"`
	Pane        *jsonPane  `json:"pane,omitempty"`
	Key         string     `json:"key"`   // base64 of the encoded key
	Value       string     `json:"value"` // base64 of the encoded value
	WatermarkMS int64      `json:"watermark_ms"`
	LatenessMS  int64      `json:"lateness_ms"` // watermark minus timestamp
	AllowedMS   int64      `json:"allowed_lateness_ms"`
}

type jsonWindow struct {
	Global  bool   `json:"global,omitempty"`
	StartMS *int64 `json:"start_ms,omitempty"`
	EndMS   *int64 `json:"end_ms,omitempty"` // exclusive
	Encoded string `json:"encoded"`          // base64, for reprocessing
}

type jsonPane struct {
	First       bool   `json:"first"`
	Last        bool   `json:"last"`
	Timing      string `json:"timing"`
	Index       int64  `json:"index"`
	OnTimeIndex int64  `json:"on_time_index"`
}

func describeWindow(w []byte) (jsonWindow, string) {
	jw := jsonWindow{Encoded: base64.StdEncoding.EncodeToString(w)}
	if len(w) == 0 {
		jw.Global = true
		return jw, "the global window"
	}
	start, end, err := wire.DecodeIntervalWindow(w)
	if err != nil {
		return jw, fmt.Sprintf("window %x", w)
	}
	s, e := int64(start), int64(end)
	jw.StartMS, jw.EndMS = &s, &e
	return jw, fmt.Sprintf("window [%s, %s)", fmtTime(start), fmtTime(end))
}

func fmtTime(t mtime.Time) string {
	return t.ToTime().UTC().Format(time.RFC3339Nano)
}

// Drop accounts for a dropped element: counts it, logs it if the last
// message about this transform is older than LogEvery, and writes it to
// the dead letter. It returns the dead letter's write error, if any.
func (t *TransformLate) Drop(d Dropped) error {
	if d.Reason == DropClosed {
		t.droppedClosed.Add(1)
	} else {
		t.droppedLate.Add(1)
	}
	jw, win := describeWindow(d.Window)
	late := time.Duration(d.Watermark-d.Timestamp) * time.Millisecond
	t.log(d.Reason, win, d.Timestamp, late, d.AllowedLateness)
	l := t.owner
	if l.DeadLetter == nil {
		return nil
	}
	rec := deadLetter{Transform: t.Name, TransformID: t.ID, Reason: d.Reason, Window: jw,
		TimestampMS: int64(d.Timestamp), Timestamp: fmtTime(d.Timestamp),
		Key: base64.StdEncoding.EncodeToString(d.Key), Value: base64.StdEncoding.EncodeToString(d.Value),
		WatermarkMS: int64(d.Watermark), LatenessMS: int64(d.Watermark - d.Timestamp), AllowedMS: int64(d.AllowedLateness)}
	if p, err := triggers.DecodePane(d.Pane); err == nil {
		rec.Pane = &jsonPane{First: p.First, Last: p.Last, Timing: p.Timing.String(), Index: p.Index, OnTimeIndex: p.OnTimeIndex}
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("dead letter of %s: %w", t.Name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dlErr != nil {
		return l.dlErr
	}
	if l.dl == nil {
		l.dl = bufio.NewWriter(l.DeadLetter)
	}
	if _, err := l.dl.Write(append(line, '\n')); err != nil {
		l.dlErr = fmt.Errorf("dead letter: %w", err)
	}
	return l.dlErr
}

func (t *TransformLate) log(reason DropReason, win string, ts mtime.Time, late time.Duration, allowed mtime.Time) {
	l := t.owner
	now := l.now()
	every := l.LogEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	why := "beyond its allowed lateness"
	if reason == DropClosed {
		why = "after its window's trigger finished"
	}
	t.mu.Lock()
	t.unlogged++
	t.lastMsg = fmt.Sprintf("latest: an element at %s in %s, %v behind the watermark, %s (allowed lateness %v)",
		fmtTime(ts), win, late, why, time.Duration(allowed)*time.Millisecond)
	if !t.lastLog.IsZero() && now.Sub(t.lastLog) < every {
		t.mu.Unlock()
		return
	}
	msg := t.messageLocked()
	t.lastLog = now
	t.mu.Unlock()
	if l.Logf != nil {
		l.Logf(t, "%s", msg)
	}
}

func (t *TransformLate) messageLocked() string {
	total := t.droppedLate.Load() + t.droppedClosed.Load()
	msg := fmt.Sprintf("%s dropped %d late element(s) (%d since the last message); %s", t.Name, total, t.unlogged, t.lastMsg)
	t.unlogged = 0
	return msg
}

// Flush writes what the dead letter buffers.
func (l *LateData) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dl == nil || l.dlErr != nil {
		return l.dlErr
	}
	if err := l.dl.Flush(); err != nil {
		l.dlErr = fmt.Errorf("dead letter: %w", err)
	}
	return l.dlErr
}

// Close logs the drops no message has reported yet and flushes the dead
// letter. It does not close DeadLetter.
func (l *LateData) Close() error {
	l.mu.Lock()
	ts := slices.Clone(l.order)
	l.mu.Unlock()
	for _, t := range ts {
		t.mu.Lock()
		var msg string
		if t.unlogged > 0 {
			msg = t.messageLocked()
		}
		t.mu.Unlock()
		if msg != "" && l.Logf != nil {
			l.Logf(t, "%s", msg)
		}
	}
	return l.Flush()
}

// MonitoringInfos reports each transform's metrics as they stand: drop
// counters always (a zero says nothing was lost), arrival delays once an
// element with an event time arrived. It is a metrics.Source.
func (l *LateData) MonitoringInfos() []*pipepb.MonitoringInfo {
	ts, sources := l.accounts()
	nowMS := l.now().UnixMilli()
	var out []*pipepb.MonitoringInfo
	for i, t := range ts {
		if !sources[i] {
			out = append(out, metrics.UserCounter(MetricsNamespace, MetricDroppedLate, t.ID, t.droppedLate.Load()))
		}
		if n := t.droppedClosed.Load(); n > 0 {
			out = append(out, metrics.UserCounter(MetricsNamespace, MetricDroppedClosed, t.ID, n))
		}
		s := t.Arrivals.Snapshot()
		if s.Count == 0 {
			continue
		}
		out = append(out, metrics.UserDistribution(MetricsNamespace, MetricArrivalDelay, t.ID, s.Count, s.Sum, s.Min, s.Max))
		for _, aq := range arrivalQuantiles {
			out = append(out, metrics.UserGauge(MetricsNamespace, MetricArrivalDelay+aq.suffix, t.ID, nowMS, s.Quantile(aq.q)))
		}
	}
	return out
}

// accounts returns every transform's account, in the order they were made,
// and whether each is a source's. Under the lock: the graph may be adding
// transforms while job metrics are read.
func (l *LateData) accounts() ([]*TransformLate, []bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := slices.Clone(l.order)
	sources := make([]bool, len(ts))
	for i, t := range ts {
		sources[i] = t.source
	}
	return ts, sources
}

// arrival records the arrival delay of an element with event time ts at
// processing time now. Elements without an event time (at the start of
// time, as batch sources write them) are not counted.
func (t *TransformLate) arrival(ts, now mtime.Time) {
	if t == nil || ts <= mtime.MinTimestamp || ts >= mtime.MaxTimestamp {
		return
	}
	t.Arrivals.Observe(int64(now - ts))
}

// Flush writes what the job's dead letter buffers.
func (t *TransformLate) Flush() error { return t.owner.Flush() }
