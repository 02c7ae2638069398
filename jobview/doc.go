// Package jobview is what operators see of a job: the figures the web UI,
// the weir CLI and the metrics exporters all read, so the three never
// disagree.
//
// A Job is a sample taken by the runner (about once a second while the job
// runs): the job's state, its stage graph with per-stage and per-subtask
// counts, rates, watermarks and backpressure, its Kafka partitions, its
// checkpoints, its late data and its last messages. The runner owns the
// figures (they live in the operators that count them); a Job is a copy,
// safe to read and to encode as JSON.
//
// The caller's loop, as the runner drives it:
//
//	var prev Raw
//	for each tick {
//		raw := read the operators' cumulative counters
//		job := raw.View(prev)   // rates and ratios over the interval
//		publish job             // UI, CLI and OpenTelemetry callbacks read it
//		prev = raw
//	}
//
// This package holds data and the pure arithmetic on it (rates, ratios,
// lags); it does no I/O.
package jobview
