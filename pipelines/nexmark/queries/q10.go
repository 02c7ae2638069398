package queries

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 10, log to sharded files: every WindowSizeSec, each shard's
// events of the window go to a file of their own, and an index file per
// window lists them (Query10, not in the original Nexmark). Beam writes to
// Google Cloud Storage and, since GcsIOChannelFactory went, writes nothing
// (it throws if given a path); here the files go to Query10Dir on the
// SDK worker's file system (for a LOOPBACK job, the submitting machine),
// nothing if it is empty. An event's file record is its binary encoding
// after a uvarint length.
//
// Beam features: fixed windows with Beam's trigger, AfterEach in order of
// (a repeated count OrFinally the end of the window) then a repeated
// AfterAny of a count and a processing-time delay, discarding panes, a
// day of allowed lateness; GroupByKey twice, the pane and the window of
// each group.
//
// Shards are a hash of the event's encoding (Beam: its hashCode), over
// NumLogShards (Beam: 5 per worker). Beam counts the events it marked
// LATE; its held-back events are late here too, but unmarked, so only the
// panes' timings are counted.
func init() {
	beam.RegisterType(reflect.TypeOf(q10File{}))
	register.DoFn2x0[model.Event, func(string, model.Event)](&q10Shard{})
	register.DoFn6x1[context.Context, typex.PaneInfo, beam.Window, string, func(*model.Event) bool, func(string, q10File), error](&q10Upload{})
	register.DoFn6x1[context.Context, typex.PaneInfo, beam.Window, string, func(*q10File) bool, func(model.Done), error](&q10Index{})
	register.Emitter2[string, model.Event]()
	register.Emitter2[string, q10File]()
	register.Iter1[model.Event]()
	register.Iter1[q10File]()
	register.Emitter1[model.Done]()
	add(Query{Name: "10", Title: "Log to sharded files", Deterministic: true, Build: buildQ10})
}

// Query10Dir is where query 10 writes its files; empty writes none. A
// flag of the nexmark command sets it.
var Query10Dir string

const q10LateBatching = 10 * time.Second

var (
	q10Early, q10OnTime, q10Late = beam.NewCounter("Query10", "earlyShard"), beam.NewCounter("Query10", "onTimeShard"), beam.NewCounter("Query10", "lateShard")
	q10Files                     = beam.NewCounter("Query10", "savedFile")
	q10Records                   = beam.NewCounter("Query10", "writtenRecords")
	q10Indexed                   = beam.NewCounter("Query10", "indexed")
	q10Unexpected                = beam.NewCounter("Query10", "ERROR_unexpectedPane")
)

// q10File is what Beam's OutputFile records of one written file.
type q10File struct {
	MaxTimestamp int64
	Shard        string
	Index        int64
	Timing       string
	Filename     string
	Records      int64
}

func buildQ10(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("Query10")
	fixed := window.NewFixedWindows(seconds(cfg.WindowSizeSec))
	count := int32(cfg.MaxLogEvents)
	shards := beam.ParDo(s.Scope("ShardEvents"), &q10Shard{Shards: cfg.NumLogShards}, events)
	windowed := beam.WindowInto(s.Scope("WindowEvents"), fixed, shards,
		beam.Trigger(trigger.AfterEach([]trigger.Trigger{
			trigger.OrFinally(trigger.Repeat(trigger.AfterCount(count)), trigger.AfterEndOfWindow()),
			trigger.Repeat(trigger.AfterAny([]trigger.Trigger{
				trigger.AfterCount(count), trigger.AfterProcessingTime().PlusDelay(q10LateBatching)})),
		})),
		beam.PanesDiscard(), beam.AllowedLateness(24*time.Hour))
	files := beam.ParDo(s.Scope("UploadEvents"), &q10Upload{Dir: Query10Dir}, beam.GroupByKey(s, windowed))
	perWindow := beam.WindowInto(s.Scope("WindowLogFiles"), fixed, files,
		beam.Trigger(trigger.Default()), beam.PanesDiscard(), beam.AllowedLateness(24*time.Hour))
	return beam.ParDo(s.Scope("Index"), &q10Index{Dir: Query10Dir}, beam.GroupByKey(s.Scope("GroupByKey2"), perWindow))
}

type q10Shard struct {
	Shards int
}

func (fn *q10Shard) ProcessElement(e model.Event, emit func(string, model.Event)) {
	h := fnv.New32a()
	h.Write(model.AppendEvent(nil, e))
	n := h.Sum32() % uint32(fn.Shards)
	emit(fmt.Sprintf("shard-%05d-of-%05d", n, fn.Shards), e)
}

type q10Upload struct {
	Dir string
}

func (fn *q10Upload) ProcessElement(ctx context.Context, pane typex.PaneInfo, w beam.Window, shard string, events func(*model.Event) bool, emit func(string, q10File)) error {
	switch pane.Timing {
	case typex.PaneEarly:
		q10Early.Inc(ctx, 1)
	case typex.PaneLate:
		q10Late.Inc(ctx, 1)
	default:
		q10OnTime.Inc(ctx, 1)
	}
	f := q10File{MaxTimestamp: w.MaxTimestamp().Milliseconds(), Shard: shard, Index: pane.Index, Timing: timingLetter(pane.Timing)}
	var buf []byte
	var e model.Event
	for events(&e) {
		f.Records++
		if fn.Dir != "" {
			rec := model.AppendEvent(nil, e)
			buf = model.AppendUvarint(buf, uint64(len(rec)))
			buf = append(buf, rec...)
		}
	}
	if fn.Dir != "" {
		f.Filename = filepath.Join(fn.Dir, fmt.Sprintf("LOG-%s-%s-%03d-%s-%x",
			instant(f.MaxTimestamp), shard, pane.Index, f.Timing, rand.Uint64()))
		if err := writeFile(f.Filename, buf); err != nil {
			return fmt.Errorf("Query10: %w", err)
		}
	}
	q10Files.Inc(ctx, 1)
	q10Records.Inc(ctx, f.Records)
	emit("", f)
	return nil
}

type q10Index struct {
	Dir string
}

func (fn *q10Index) ProcessElement(ctx context.Context, pane typex.PaneInfo, w beam.Window, _ string, files func(*q10File) bool, emit func(model.Done)) error {
	if pane.Timing != typex.PaneOnTime || pane.Index != 0 {
		q10Unexpected.Inc(ctx, 1) // the default trigger fires once, on time
		return nil
	}
	maxTs := instant(w.MaxTimestamp().Milliseconds())
	var index strings.Builder
	var f q10File
	for files(&f) {
		fmt.Fprintf(&index, "%s %s %d %s %s %d\n", instant(f.MaxTimestamp), f.Shard, f.Index, f.Timing, f.Filename, f.Records)
	}
	if fn.Dir != "" {
		if err := writeFile(filepath.Join(fn.Dir, "INDEX-"+maxTs), []byte(index.String())); err != nil {
			return fmt.Errorf("Query10: %w", err)
		}
	}
	q10Indexed.Inc(ctx, 1)
	emit(model.Done{Message: "written for timestamp " + maxTs})
	return nil
}

// timingLetter is Query10.timingToString.
func timingLetter(t typex.PaneTiming) string {
	switch t {
	case typex.PaneEarly:
		return "E"
	case typex.PaneOnTime:
		return "O"
	case typex.PaneLate:
		return "L"
	}
	return "U"
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
