package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pane is one output record of the soak job: a key-window's count and
// sum so far (accumulating panes) and the pane's number, from the job's
// stateful step.
type pane struct {
	count, sum, number int64
	timing             string // the pane timing the job saw (always EARLY after the Go SDK's combine)
}

// outcome is what the check of the output found.
type outcome struct {
	windows int   // key-windows produced
	panes   int64 // output records read
	lost    int   // key-windows missing, or missing panes, or short of records
	doubled int   // key-windows with a pane number twice
	wrong   int   // key-windows whose last pane's figures are not what was produced
	unknown int   // key-windows in the output that were never produced
	// reordered counts the key-windows whose fullest pane was not the
	// last the stateful step numbered: panes reached it out of order,
	// which Beam allows (nothing orders a PCollection) and weir does when
	// the stage after a group-by-key runs on several subtasks (its input
	// edge deals whole batches round robin). Not a failure.
	reordered int
	problems  []string
	// short are the key-windows whose last pane holds fewer records than
	// were produced into them, with what it lacks, for explain.
	short []shortWindow
}

// shortWindow is a key-window whose last pane lacks records: missing is
// the count and sum of what it lacks.
type shortWindow struct {
	wk      windowKey
	missing agg
}

func (o outcome) ok() bool { return o.lost+o.doubled+o.wrong+o.unknown == 0 }

// maxProblems bounds the problems an outcome lists; the counts are whole.
const maxProblems = 20

func (o *outcome) problem(format string, args ...any) {
	if len(o.problems) < maxProblems {
		o.problems = append(o.problems, fmt.Sprintf(format, args...))
	}
}

// check compares the panes read (by key-window) with what was produced.
// Exactly once means: each key-window's panes are numbered 1..N, each
// number once, no two panes hold the same count (each pane fires with
// new records, so a repeated count is a pane fired twice), and the pane
// with the most records holds the count and sum of every record produced
// into the window. Not pane N: panes may reach the stateful step that
// numbers them in another order than they fired, and the Go SDK's
// combine drops their PaneInfo, so the job cannot number them by Beam's
// pane index.
func check(want map[windowKey]agg, got map[windowKey][]pane) outcome {
	o := outcome{windows: len(want)}
	for _, ps := range got {
		o.panes += int64(len(ps))
	}
	for _, wk := range sortedWindows(want) {
		w, ps := want[wk], got[wk]
		name := fmt.Sprintf("%s at %s", wk.key, time.UnixMilli(wk.start).UTC().Format(time.TimeOnly))
		if len(ps) == 0 {
			o.lost++
			o.problem("%s: no pane, want count %d sum %d", name, w.count, w.sum)
			continue
		}
		seen, counts := map[int64]int{}, map[int64]int{}
		var last, most pane
		for _, p := range ps {
			seen[p.number]++
			counts[p.count]++
			if p.number > last.number {
				last = p
			}
			if p.count > most.count {
				most = p
			}
		}
		if most.number != last.number {
			o.reordered++
		}
		switch {
		case len(seen) != len(ps):
			o.doubled++
			o.problem("%s: %d panes with %d numbers: a pane was written twice", name, len(ps), len(seen))
		case int64(len(seen)) != last.number:
			o.lost++
			o.problem("%s: panes numbered up to %d, %d of them: a pane is missing", name, last.number, len(seen))
		case len(counts) != len(ps):
			// Each pane fires only with new records, so accumulating panes
			// of one window never hold the same count twice.
			o.doubled++
			o.problem("%s: %d panes with %d distinct counts: a pane fired twice", name, len(ps), len(counts))
		case most.count != w.count || most.sum != w.sum:
			if most.count < w.count {
				o.lost++
				o.short = append(o.short, shortWindow{wk, agg{w.count - most.count, w.sum - most.sum}})
			} else {
				o.wrong++
			}
			o.problem("%s: the fullest pane (number %d of %d) has count %d sum %d, want count %d sum %d", name, most.number,
				last.number, most.count, most.sum, w.count, w.sum)
		}
	}
	for _, wk := range sortedWindows(got) {
		if _, ok := want[wk]; !ok {
			o.unknown++
			o.problem("%s at %d: in the output, never produced", wk.key, wk.start)
		}
	}
	return o
}

func sortedWindows[V any](m map[windowKey]V) []windowKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b windowKey) int {
		return cmp.Or(cmp.Compare(a.start, b.start), strings.Compare(a.key, b.key))
	})
}

// parsePane reads an output record: key, value
// "start|count|sum|pane|timing|index".
func parsePane(key, value []byte) (windowKey, pane, error) {
	var wk windowKey
	var p pane
	f := strings.Split(string(value), "|")
	var err error
	if len(f) != 6 {
		err = errors.New("want 6 fields")
	}
	for i, dst := range []*int64{&wk.start, &p.count, &p.sum, &p.number} {
		if err == nil {
			*dst, err = strconv.ParseInt(f[i], 10, 64)
		}
	}
	if err != nil {
		return wk, p, fmt.Errorf("output record %q=%q: %w", key, value, err)
	}
	wk.key, p.timing = string(key), f[4]
	return wk, p, nil
}

// readOutput reads topic from the start with read_committed isolation, up
// to a sentinel it first appends to each partition (so it stops at the
// end as of now, past every transaction committed before).
func readOutput(ctx context.Context, brokers []string, topic string, partitions int32) (map[windowKey][]pane, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	sentinel := fmt.Sprintf("sentinel %d", time.Now().UnixNano())
	for part := range partitions {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(sentinel)}).FirstErr(); err != nil {
			p.Close()
			return nil, fmt.Errorf("writing the sentinel to %s/%d: %w", topic, part, err)
		}
	}
	p.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	got := map[windowKey][]pane{}
	var bad error
	for seen := 0; seen < int(partitions); {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if v := string(r.Value); strings.HasPrefix(v, "sentinel ") {
				if v == sentinel {
					seen++
				}
				return
			}
			wk, p, err := parsePane(r.Key, r.Value)
			if err != nil {
				bad = err
				return
			}
			got[wk] = append(got[wk], p)
		})
	}
	return got, bad
}
