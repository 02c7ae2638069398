// Package telemetry exports weir's figures through OpenTelemetry: one
// meter provider per server, read by a Prometheus exporter (served as
// text at /metrics) and, when an endpoint is given, pushed by an OTLP
// exporter.
//
// The figures are not kept here. Every instrument is asynchronous: at each
// collection one callback asks the server for its jobs' newest samples
// (package jobview, which the web UI and the CLI read too) and observes
// them, so the three never disagree and the executor's hot path pays
// nothing for the exporters. docs/metrics.md lists every metric with its
// unit and labels; a test keeps it true.
//
// Labels are bounded: job, job_name, stage, subtask, Kafka topic and
// partition, alignment group, transform, and the metric's own small
// enumerations (direction, state, reason, quantile); never a key or a
// window.
//
// The caller's loop:
//
//	p, err := telemetry.New(ctx, server.JobViews, telemetry.Options{OTLPEndpoint: ...})
//	mux.Handle("/metrics", p.Handler())
//	...
//	p.Shutdown(ctx) // flushes OTLP and stops the provider
package telemetry
