package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

const mb = 1 << 20

// columns are the figures of a sample, in the CSV's and the table's
// order, each with how it is judged and the change that is noise.
func columns(rate int) []column {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return []column{
		{"server_rss_mb", "weir serve RSS (MB)", func(s sample) float64 { return float64(s.serverRSS) / mb }, ruleLevel, 4},
		{"server_heap_mb", "weir serve Go heap in use (MB)", func(s sample) float64 { return float64(s.serverHeap) / mb }, ruleLevel, 4},
		{"server_outside_go_mb", "weir serve RSS outside the Go runtime (MB)", func(s sample) float64 { return float64(s.serverRSS-s.serverGoHeld) / mb }, ruleShow, 0},
		{"goroutines", "weir serve goroutines", func(s sample) float64 { return float64(s.goroutines) }, ruleFloor, 5},
		{"server_fds", "weir serve open files", func(s sample) float64 { return float64(s.serverFDs) }, ruleFloor, 5},
		{"server_threads", "weir serve threads", func(s sample) float64 { return float64(s.serverThreads) }, ruleShow, 0},
		{"worker_rss_mb", "SDK worker RSS (MB)", func(s sample) float64 { return float64(s.workerRSS) / mb }, ruleLevel, 4},
		{"worker_fds", "SDK worker open files", func(s sample) float64 { return float64(s.workerFDs) }, ruleFloor, 3},
		{"pebble_files", "Pebble files", func(s sample) float64 { return float64(s.pebbleFiles) }, ruleFloor, 5},
		{"pebble_sst", "Pebble sstables", func(s sample) float64 { return float64(s.pebbleSST) }, ruleShow, 0},
		{"pebble_mb", "Pebble bytes (MB)", func(s sample) float64 { return float64(s.pebbleBytes) / mb }, ruleLevel, 2},
		{"checkpoint_folders", "checkpoint folders", func(s sample) float64 { return float64(s.ckptFolders) }, ruleFloor, 0},
		{"checkpoint_mb", "checkpoint folders' bytes (MB)", func(s sample) float64 { return float64(s.ckptBytes) / mb }, ruleLevel, 2},
		{"messages_kept", "job messages kept", func(s sample) float64 { return float64(s.messagesKept) }, ruleShow, 0},
		{"messages_total", "job messages ever", func(s sample) float64 { return float64(s.messagesTotal) }, ruleFloor, 10},
		{"produced_per_s", "records produced per s", func(s sample) float64 { return s.producedRate }, ruleShow, 0},
		{"consumed_per_s", "records read per s", func(s sample) float64 { return s.consumedRate }, ruleShow, 0},
		{"consumer_lag", "Kafka consumer lag (records)", func(s sample) float64 { return float64(s.consumerLag) }, ruleLevel, float64(5 * rate)},
		{"watermark_lag_s", "watermark lag, largest stage (s)", func(s sample) float64 { return s.watermarkLag }, ruleLevel, 5},
		{"checkpoints", "checkpoints completed per sample", func(s sample) float64 { return float64(len(s.ckptDurations)) }, ruleShow, 0},
		{"checkpoint_ms_median", "checkpoint duration, median (ms)", func(s sample) float64 { return ms(pick(s.ckptDurations, 0.5)) }, ruleLevel, 250},
		{"checkpoint_ms_max", "checkpoint duration, max (ms)", func(s sample) float64 { return ms(pick(s.ckptDurations, 1)) }, ruleShow, 0},
		{"checkpoint_kb", "checkpoint size (KB)", func(s sample) float64 { return float64(s.ckptBytesLast) / 1024 }, ruleLevel, 1024},
	}
}

// pick returns the q-quantile of sorted durations; 0 for none.
func pick(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1)+0.5)]
}

// verdicts judges every column over the samples.
func verdicts(cols []column, samples []sample) []verdict {
	ats := make([]time.Duration, len(samples))
	for i, s := range samples {
		ats[i] = s.at
	}
	var out []verdict
	for _, c := range cols {
		vs := make([]float64, len(samples))
		for i, s := range samples {
			vs[i] = c.get(s)
		}
		out = append(out, judge(c, ats, vs))
	}
	return out
}

// writeCSV writes one row per sample.
func writeCSV(path string, cols []column, samples []sample) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	head := []string{"t_s"}
	for _, c := range cols {
		head = append(head, c.name)
	}
	_ = w.Write(head)
	for _, s := range samples {
		row := []string{strconv.FormatFloat(s.at.Seconds(), 'f', 0, 64)}
		for _, c := range cols {
			row = append(row, strconv.FormatFloat(c.get(s), 'f', -1, 64))
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// table renders the verdicts as markdown.
func table(vs []verdict) string {
	var b strings.Builder
	b.WriteString("| figure | start | middle | end | slope per hour | judged | result |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | --- | --- |\n")
	for _, v := range vs {
		judged, result := "shown", ""
		switch v.col.rule {
		case ruleLevel:
			judged = fmt.Sprintf("level, noise %s", num(v.col.floor))
		case ruleFloor:
			judged = fmt.Sprintf("least value, noise %s", num(v.col.floor))
		}
		switch {
		case v.grows:
			result = "**grows**: " + v.why
		case v.judged:
			result = "flat"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", v.col.title, num(v.start), num(v.middle), num(v.end),
			num(v.slopePerHour), judged, result)
	}
	return b.String()
}

// writeSection replaces the section of the markdown file at path that
// starts at the line heading (up to the next heading of its level or
// higher) with section, or appends section when there is none.
func writeSection(path, heading, section string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(old), "\n")
	level := strings.IndexByte(heading, ' ') // "## Soak" is level 2
	start, end := -1, len(lines)
	for i, l := range lines {
		t := strings.TrimRight(l, "\n")
		if start < 0 {
			if t == heading {
				start = i
			}
			continue
		}
		if h := strings.IndexByte(t, ' '); h > 0 && h <= level && strings.Trim(t[:h], "#") == "" {
			end = i
			break
		}
	}
	section = strings.TrimRight(section, "\n") + "\n"
	var out string
	if start < 0 {
		out = strings.TrimRight(string(old), "\n") + "\n\n" + section
	} else {
		rest := strings.Join(lines[end:], "")
		if rest != "" {
			section += "\n"
		}
		out = strings.Join(lines[:start], "") + section + rest
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// messageSummary returns the job's messages grouped by importance and
// text (numbers masked), most frequent first.
func messageSummary(ctx context.Context, c jobpb.JobServiceClient, id string) []string {
	msgs, _, err := jobMessages(ctx, c, id)
	if err != nil {
		return []string{fmt.Sprintf("(could not read them: %v)", err)}
	}
	digits := regexp.MustCompile(`[0-9]+`)
	counts := map[string]int{}
	for _, m := range msgs {
		text := m.GetMessageText()
		if len(text) > 160 {
			text = text[:160] + "…"
		}
		imp := strings.TrimPrefix(m.GetImportance().String(), "JOB_MESSAGE_")
		counts[imp+" "+digits.ReplaceAllString(text, "N")]++
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b))
	})
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%d × %s", counts[k], k))
	}
	return out
}

// loadAverage reads the one-minute load average.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// finish judges the run, writes the CSV and the report, and returns an
// error naming every failure.
func finish(res *result, loopErr error) error {
	if loopErr != nil {
		res.failures = append(res.failures, "the run stopped early: "+loopErr.Error())
	}
	for _, v := range res.verdicts {
		if v.grows {
			res.failures = append(res.failures, fmt.Sprintf("%s grows: %s", v.col.title, v.why))
		}
	}
	if n := len(res.samples); n > 0 && res.samples[n-1].ckptFailed > 0 {
		res.failures = append(res.failures, fmt.Sprintf("%d checkpoints failed", res.samples[n-1].ckptFailed))
	}
	if len(res.samples) < minSamples {
		res.failures = append(res.failures, fmt.Sprintf("%d samples: too few to judge (at least %d)", len(res.samples), minSamples))
	}
	if res.lateDropped > 0 {
		res.failures = append(res.failures, fmt.Sprintf("%d elements dropped as late: the producer keeps within the allowed lateness", res.lateDropped))
	}
	switch {
	case res.exactErr != nil:
		res.failures = append(res.failures, "the output was not checked: "+res.exactErr.Error())
	case !res.outcome.ok():
		res.failures = append(res.failures, fmt.Sprintf("the output is not exact: %d key-windows lost, %d doubled, %d wrong, %d unknown",
			res.outcome.lost, res.outcome.doubled, res.outcome.wrong, res.outcome.unknown))
	}
	section := render(res)
	fmt.Print(section)
	var errs []error
	if *csvPath != "" {
		errs = append(errs, writeCSV(*csvPath, columns(*rate), res.samples))
	}
	if *out != "" {
		errs = append(errs, writeSection(*out, "## Soak", section))
	}
	if len(res.failures) > 0 {
		errs = append(errs, fmt.Errorf("%d findings:\n  %s", len(res.failures), strings.Join(res.failures, "\n  ")))
	}
	return errors.Join(errs...)
}

// render writes the report's "## Soak" section.
func render(res *result) string {
	var b strings.Builder
	b.WriteString("## Soak\n\n")
	fmt.Fprintf(&b, "Generated by `make soak` (pipelines/soak) on %s. A streaming job ", res.started.UTC().Format("2006-01-02"))
	b.WriteString("(pipelines/soak/soakjob: Kafka read with a 3 s out-of-orderness bound and a 5 s idle timeout; ")
	b.WriteString("10 s event-time windows firing early every 2 s of processing time, on time, and at each late record ")
	b.WriteString("for 30 s of allowed lateness, accumulating; a combine; a stateful step numbering each key-window's ")
	b.WriteString("panes in a value state; an exactly-once Kafka sink) ")
	fmt.Fprintf(&b, "ran in `weir serve` with a LOOPBACK Go worker, checkpointing every %v, for %v, against Apache Kafka 4.4.0 ",
		*checkEvery, res.ended.Sub(res.started).Round(time.Second))
	fmt.Fprintf(&b, "(internal/tools/kafka.sh), while a producer wrote %d records/s (%d keys, %d partitions, the last one idle ",
		*rate, *keys, *partitions)
	fmt.Fprintf(&b, "two thirds of each minute; 1%% of records 5-20 s late). %d samples, one every %v; ", len(res.samples), *every)
	fmt.Fprintf(&b, "%d records produced. %s The machine is shared with other builds and tests (load average %s at the end ", res.produced, machine(), loadAverage())
	b.WriteString("on 2 cores): the figures are about flatness, not speed.\n\n")
	fmt.Fprintf(&b, "Reproduce: `make soak` (`SOAK_DURATION=%v`); the samples are in `docs/soak/samples.csv`.\n\n", *duration)
	b.WriteString(table(res.verdicts))
	b.WriteString("\nStart, middle and end are the medians of the run's thirds; the slope is the Theil-Sen slope (median of ")
	b.WriteString("pairwise slopes) over the last two thirds. The first third is warm-up and is not judged. A **level** figure ")
	fmt.Fprintf(&b, "grows when its median rose from the middle third to the last by more than its noise and both that rise and the slope come to more than %.0f%% of the middle third's median per hour; ", 100*maxGrowthPerHour)
	b.WriteString("a **least value** figure (a count that comes back to a base between bursts) grows when its least value ")
	b.WriteString("rose by more than its noise and the slope is positive.\n\n")
	if res.exactErr != nil {
		fmt.Fprintf(&b, "Output: not checked (%v).\n\n", res.exactErr)
	} else {
		o := res.outcome
		verdict := "exact"
		if !o.ok() {
			verdict = "**not exact**"
		}
		fmt.Fprintf(&b, "Output, after the producer stopped, the job read every record and was drained: a `read_committed` reader saw %d panes of %d key-windows; ", o.panes, o.windows)
		fmt.Fprintf(&b, "lost %d, doubled %d, wrong %d, never produced %d: %s (each key-window's panes numbered 1..N once each by the stateful step, no two with the same count, the fullest with the count and sum of every record produced into it). ", o.lost, o.doubled, o.wrong, o.unknown, verdict)
		fmt.Fprintf(&b, "In %d key-windows the fullest pane was not the last one numbered: panes reached the stateful step out of order, which Beam allows (see Soak findings).\n", o.reordered)
		for _, p := range o.problems {
			fmt.Fprintf(&b, "- %s\n", p)
		}
		b.WriteString("\n")
		if len(res.explained) > 0 {
			b.WriteString("The input records that could be the missing ones (pipelines/soak/explain.go):\n\n")
			for _, e := range res.explained {
				fmt.Fprintf(&b, "- %s\n", e)
			}
			b.WriteString("\n")
		}
	}
	if len(res.stages) > 0 {
		fmt.Fprintf(&b, "Elements by stage over the job's life (%d dropped as late):\n\n", res.lateDropped)
		b.WriteString("| stage | in | out |\n| --- | ---: | ---: |\n")
		for _, c := range res.stages {
			fmt.Fprintf(&b, "| %s | %d | %d |\n", strings.ReplaceAll(c.stage, "|", "\\|"), c.in, c.out)
		}
		b.WriteString("\n")
	}
	if n := len(res.samples); n > 0 {
		fmt.Fprintf(&b, "Checkpoints: %d completed, %d failed.\n\n", res.samples[n-1].ckptCompleted, res.samples[n-1].ckptFailed)
	}
	b.WriteString("Job messages, by text (numbers as N):\n\n")
	if len(res.messages) == 0 {
		b.WriteString("- none\n")
	}
	for i, m := range res.messages {
		if i == 10 {
			fmt.Fprintf(&b, "- … %d more\n", len(res.messages)-i)
			break
		}
		fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(m, "|", "\\|"))
	}
	if len(res.failures) == 0 {
		b.WriteString("\nResult: **pass**: every judged figure is flat and the output is exact.\n")
	} else {
		b.WriteString("\nResult: **fail**:\n\n")
		for _, f := range res.failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return b.String()
}

func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("Machine: %d cores, %s, host %s.", runtime.NumCPU(), runtime.Version(), host)
}
