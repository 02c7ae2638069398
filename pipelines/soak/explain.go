package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// When a key-window's last pane lacks records, the output alone cannot
// say which: a pane holds a count and a sum. explain reads the input
// topic again and lists, for each short window, the records that could be
// the missing ones (when one record is missing, those of its key-window
// whose value is the missing sum), each with what the runner saw of it:
// its partition and offset, its event time against the window's end, how
// long after its event time it was produced, and how far behind the
// newest event time of its partition so far it was. That tells a record
// the job received late from one it received in order.

// maxExplained bounds the short windows explained.
const maxExplained = 10

// inputRecord is what explain keeps of one input record.
type inputRecord struct {
	partition   int32
	offset      int64
	value       int64
	event       time.Time
	produced    time.Time // from the producedHeader; zero if absent
	behindNewer time.Duration
}

// explain returns one line per short window (at most maxExplained).
func explain(ctx context.Context, brokers []string, topic string, window time.Duration, short []shortWindow) ([]string, error) {
	if len(short) == 0 {
		return nil, nil
	}
	short = short[:min(len(short), maxExplained)]
	of := map[windowKey][]inputRecord{}
	for _, s := range short {
		of[s.wk] = nil
	}
	err := readInput(ctx, brokers, topic, func(r *kgo.Record, behind time.Duration) {
		ts := r.Timestamp.UnixMilli()
		wk := windowKey{string(r.Key), ts - ts%window.Milliseconds()}
		if _, ok := of[wk]; !ok {
			return
		}
		v, _ := strconv.ParseInt(string(r.Value), 10, 64)
		in := inputRecord{partition: r.Partition, offset: r.Offset, value: v, event: r.Timestamp, behindNewer: behind}
		for _, h := range r.Headers {
			if h.Key == producedHeader {
				if ms, err := strconv.ParseInt(string(h.Value), 10, 64); err == nil {
					in.produced = time.UnixMilli(ms)
				}
			}
		}
		of[wk] = append(of[wk], in)
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range short {
		out = append(out, explainOne(s, of[s.wk], window))
	}
	return out, nil
}

// explainOne describes one short window from its input records.
func explainOne(s shortWindow, recs []inputRecord, window time.Duration) string {
	end := time.UnixMilli(s.wk.start).Add(window)
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s (%d records in the input): %d records of sum %d missing", s.wk.key,
		time.UnixMilli(s.wk.start).UTC().Format(time.TimeOnly), len(recs), s.missing.count, s.missing.sum)
	if s.missing.count != 1 {
		return b.String()
	}
	cands := slices.DeleteFunc(slices.Clone(recs), func(r inputRecord) bool { return r.value != s.missing.sum })
	fmt.Fprintf(&b, "; %d candidates:", len(cands))
	for _, r := range cands {
		fmt.Fprintf(&b, " [p%d@%d event %s to the window's end", r.partition, r.offset, signed(r.event.Sub(end)))
		if !r.produced.IsZero() {
			fmt.Fprintf(&b, ", produced %s after its event time", r.produced.Sub(r.event).Round(time.Millisecond))
		}
		fmt.Fprintf(&b, ", %s behind its partition's newest]", r.behindNewer.Round(time.Millisecond))
	}
	return b.String()
}

func signed(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// readInput reads topic from the start to its end offsets as of now, and
// calls fn with each record and how far its event time is behind the
// newest before it in its partition.
func readInput(ctx context.Context, brokers []string, topic string, fn func(r *kgo.Record, behind time.Duration)) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	newest := map[int32]time.Time{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("reading %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := left[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			var behind time.Duration
			if n := newest[r.Partition]; n.After(r.Timestamp) {
				behind = n.Sub(r.Timestamp)
			} else {
				newest[r.Partition] = r.Timestamp
			}
			fn(r, behind)
			if r.Offset == end-1 {
				delete(left, r.Partition)
			}
		})
	}
	return nil
}
