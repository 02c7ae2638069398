package webui

import (
	"fmt"
	"time"

	"github.com/weir-runner/weir/jobview"
)

// fakeStage is one stage of the fake pipeline and how loaded it is.
type fakeStage struct {
	name, kind          string
	parallelism         int
	rate                float64 // elements out per second
	busy, backpressured float64
	behind              int64 // ms its output watermark trails the source's
}

// The fake pipeline: clicks keyed and counted per minute, joined with a
// broadcast of profiles (whose edge spans three layers), and a dead-letter
// branch.
var fakeStages = []fakeStage{
	{"Read clicks (Kafka)", "source", 2, 4200, 0.18, 0, 0},
	{"Parse JSON", "sdk", 4, 4150, 0.42, 0.05, 200},
	{"Key by user", "sdk", 4, 4150, 0.3, 0.35, 400},
	{"Window 1m / Count", "gbk", 4, 310, 0.71, 0.04, 60_000},
	{"Read profiles", "source", 1, 12, 0.02, 0, 0},
	{"Join profiles", "sdk", 2, 305, 0.2, 0.68, 61_000},
	{"Write counts (Kafka)", "sink", 2, 300, 0.93, 0, 61_500},
	{"Dead letter", "sink", 1, 3, 0.01, 0, 300},
}

var fakeEdges = []jobview.Edge{
	{From: 0, To: 1, Partition: "forward"}, {From: 1, To: 2, Partition: "forward"},
	{From: 2, To: 3, Partition: "hash"}, {From: 3, To: 5, Partition: "hash"},
	{From: 4, To: 5, Partition: "broadcast"}, {From: 5, To: 6, Partition: "forward"},
	{From: 1, To: 7, Partition: "forward"},
}

// sample is stream-1's n-th sample: event time moves 1.5 s per sample, so
// every watermark changes between two polls.
func sample(sum jobview.Summary, n, savepoints int) jobview.Job {
	sampled := sum.Start.Add(time.Duration(sum.Seconds) * time.Second)
	ended := sum.State == "DRAINED" || sum.State == "CANCELLED"
	source := sampled.Add(-2*time.Second).UnixMilli() - 40_000 + int64(n)*1500
	job := jobview.Job{Summary: sum, SampledAt: sampled, Interval: time.Second, Edges: fakeEdges}
	for i, fs := range fakeStages {
		wm := source - fs.behind
		if ended {
			wm = jobview.MaxWatermark
		}
		wobble := 1 + 0.05*float64((n+i)%3-1)
		st := jobview.Stage{Index: i, Name: fs.name, Kind: fs.kind, Parallelism: fs.parallelism,
			InputWatermark: wm, OutputWatermark: wm, StateBytes: -1}
		st.Ratios = ratios(fs.busy, fs.backpressured, ended)
		if !ended {
			st.Rates = jobview.Rates{ElementsInPerSecond: fs.rate * wobble * 1.01, ElementsOutPerSecond: fs.rate * wobble,
				BytesInPerSecond: fs.rate * 180, BytesOutPerSecond: fs.rate * 160}
			st.WatermarkLag = float64(sampled.UnixMilli()-wm) / 1000
		}
		for k := 0; k < fs.parallelism; k++ {
			sub := jobview.Subtask{Index: k, InputWatermark: wm, OutputWatermark: wm - int64(k)*50,
				WatermarkLag: st.WatermarkLag + float64(k)*0.05, QueueCapacity: 64}
			if ended {
				sub.OutputWatermark = wm
			}
			out := int64(fs.rate * float64(1200+n) / float64(fs.parallelism))
			sub.Counts = jobview.Counts{ElementsIn: out + out/100, ElementsOut: out, BytesIn: out * 180, BytesOut: out * 160}
			sub.Rates = jobview.Rates{ElementsInPerSecond: st.ElementsInPerSecond / float64(fs.parallelism),
				ElementsOutPerSecond: st.ElementsOutPerSecond / float64(fs.parallelism)}
			sub.Ratios = ratios(fs.busy*(1-0.1*float64(k)), fs.backpressured, ended)
			if !ended {
				sub.QueueDepth = int(64 * fs.backpressured * (1 - 0.1*float64(k)))
			}
			st.Counts.ElementsIn += sub.ElementsIn
			st.Counts.ElementsOut += sub.ElementsOut
			st.Subtasks = append(st.Subtasks, sub)
		}
		job.Stages = append(job.Stages, st)
	}
	job.Partitions = partitions(source, n, ended)
	job.Alignment = []jobview.Alignment{{Group: "clicks", Bound: source + 30_000, Spread: 12.5, Paused: 1}}
	job.Checkpoints = checkpoints(sum.Start, n, savepoints)
	job.Late = []jobview.Late{
		{Transform: "Read clicks (Kafka)", Source: true, Arrivals: int64(4200 * (1200 + n)), ArrivalP50: 850, ArrivalP99: 4100, ArrivalMax: 61_000},
		{Transform: "Window 1m / Count", DroppedLate: 17 + int64(n/5), DroppedClosed: 2, InputSpread: 0.4},
	}
	job.Workers = jobview.Workers{Running: 3, Lost: 1, BundleRetries: 2}
	job.User = []jobview.UserMetric{
		{Namespace: "clicks", Name: "parsed", Transform: "Parse JSON", Kind: "counter", Value: float64(4150 * (1200 + n))},
		{Namespace: "clicks", Name: "malformed", Transform: "Parse JSON", Kind: "counter", Value: float64(3 * (1200 + n))},
		{Namespace: "clicks", Name: "payload_bytes", Transform: "Parse JSON", Kind: "distribution", Count: int64(4150 * (1200 + n)), Sum: 180 * float64(4150*(1200+n)), Min: 42, Max: 2048},
		{Namespace: "join", Name: "profiles_cached", Transform: "Join profiles", Kind: "gauge", Value: 81_234},
	}
	for i := max(0, n-30); i < n; i++ {
		job.Messages = append(job.Messages, jobview.Message{Time: sum.Start.Add(time.Duration(1200+i) * time.Second),
			Importance: []string{"BASIC", "DETAILED", "BASIC", "WARNING"}[i%4],
			Text:       fmt.Sprintf("checkpoint %d: %s", 40+i/10, []string{"triggered", "aligned", "completed in 1.2 s", "subtask 2 of Join profiles waited 800 ms for barriers"}[i%4])})
	}
	if sum.State == "DRAINED" {
		job.Messages = append(job.Messages, jobview.Message{Time: sampled, Importance: "BASIC", Text: "drained: every window fired"})
	}
	return job
}

func ratios(busy, bp float64, ended bool) jobview.Ratios {
	if ended {
		return jobview.Ratios{Idle: 1}
	}
	return jobview.Ratios{Busy: busy, Backpressured: bp, Idle: 1 - busy - bp}
}

func partitions(source int64, n int, ended bool) []jobview.Partition {
	var ps []jobview.Partition
	for p := int32(0); p < 4; p++ {
		wm := source + int64(p)*900
		if ended {
			wm = jobview.MaxWatermark
		}
		ps = append(ps, jobview.Partition{Source: "Read clicks (Kafka)", Subtask: int(p) % 2, Topic: "clicks", Partition: p,
			Watermark: wm, Next: int64(1_000_000*(p+1)) + int64(n)*1050, Lag: int64(400 * (3 - p)),
			LagSeconds: 0.1 * float64(3-p), Paused: p == 3 && !ended, Idle: p == 2 && !ended})
	}
	lag := int64(-1) // the broker has not told the high watermark yet
	if n > 2 {
		lag = 0
	}
	return append(ps, jobview.Partition{Source: "Read profiles", Topic: "profiles", Partition: 0,
		Watermark: jobview.MinWatermark, Next: 88_120, Lag: lag, Idle: true})
}

func checkpoints(start time.Time, n, savepoints int) jobview.Checkpoints {
	c := jobview.Checkpoints{Enabled: true, Completed: 40 + n/10, Failed: 1, InProgress: n%10 < 2}
	for id := int64(41 + n/10); id > int64(36+n/10); id-- {
		cp := jobview.Checkpoint{ID: id, Status: "completed", Trigger: start.Add(time.Duration(id*30) * time.Second),
			Seconds: 1.2 + float64(id%3)*0.4, Bytes: 48_000_000 + id*1_000_000, InFlight: 120_000 * (id % 2), AlignmentSeconds: 0.8, Unaligned: int(id % 2)}
		switch {
		case id == int64(41+n/10) && c.InProgress:
			cp.Status = "in progress"
		case id%5 == 3:
			cp.Status, cp.Failure = "failed", "subtask 1 of Join profiles: barrier alignment timed out after 60 s"
		}
		for i, fs := range fakeStages[:4] {
			for k := 0; k < fs.parallelism; k++ {
				cp.Subtasks = append(cp.Subtasks, jobview.CheckpointSubtask{Stage: fs.name, Subtask: k, Acknowledged: cp.Status != "in progress" || k%2 == 0,
					StartDelaySeconds: 0.01 * float64(i+k), AlignmentSeconds: 0.2 * float64(i), SyncSeconds: 0.003, AsyncSeconds: 0.4, Bytes: 3_000_000, Unaligned: i == 2 && k == 1})
			}
		}
		c.History = append(c.History, cp)
	}
	if savepoints > 0 {
		c.History = append([]jobview.Checkpoint{{ID: int64(1000 + savepoints), Status: "completed", Savepoint: true,
			Trigger: start.Add(1200 * time.Second), Seconds: 2.4, Bytes: 51_000_000}}, c.History...)
	}
	return c
}
