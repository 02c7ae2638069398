// Package translate turns a portable pipeline into weir's physical plan.
//
// Build validates the pipeline (every leaf transform's URN, every
// requirement, every windowing strategy, every environment), expands
// splittable DoFns into their three SDF steps, and fuses SDK transforms into
// stages. Runner-native transforms (Impulse, Flatten, GroupByKey) become
// stages of their own. Each PCollection that crosses a stage boundary is a
// runner PCollection: its elements travel between stages encoded with a wire
// coder in which every coder the runner cannot measure is length-prefixed.
//
// Fusion is greedy and simple: an SDK transform joins the stage that
// produces its main input unless that input comes from the runner, the
// transform reads side inputs (a side input must be complete before its
// reader runs, so its reader starts a stage of its own), or it processes
// SDF restrictions (so that restrictions can be re-queued and split).
//
// Connectors (Options.Connectors, package connector) add runner-native
// sources and sinks: Kafka, files, TestStream. A transform whose URN a
// connector claims is decoded once by it, at submission, and becomes a
// stage of its own (KindNative) that carries the decoded configuration;
// translate knows no connector by name (native.go).
//
// Unsupported features fail Build with an error that names the transform
// and the URN; weir never runs a pipeline it would run wrong.
package translate
