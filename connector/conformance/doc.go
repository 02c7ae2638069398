// Package conformance is the suite every connector's sink and source
// passes, as Benthos' StreamTestCheckpointCapture: the same cases, each a
// script of protocol steps with crashes, failures and repeated
// notifications, run against every connector through a small harness.
//
// A sink (RunSink) is driven through a twophase.Driver the way the
// executor drives it: writes, barriers, snapshots of its store namespace
// (the checkpoint), completed checkpoints, the end of input. A crash drops
// the driver and sink without a word and starts a new one over the store
// of a snapshot, as a restored job does; what the crashed run wrote after
// that checkpoint the script writes again, as the sources would replay
// it. Faults are injected around the sink's Commit by a wrapper, so any
// sink gets them: commits that fail before taking effect, commits that
// take effect and then report failure (the outcome unknown to the
// caller), and a crash right after a commit took effect. After every
// script the harness reads back what a reader sees as committed, and the
// case says how often each value must be there: once, or, where a restore
// replays what was committed after the restored checkpoint, at least
// once.
//
// A source (RunSource) runs in an executor graph ahead of a collecting
// operator; the suite injects barriers, completes checkpoints (twice, and
// ones never taken), crashes the graph and restores it from a checkpoint's
// snapshot, and checks that the collected output, cut at the restored
// barrier, is the source's input exactly once.
//
// Each run records its results when WEIR_CONFORMANCE_OUT names a folder:
// `make conformance` runs every connector's suite that way and renders
// the table of docs/connectors.md from the records (Render).
package conformance
