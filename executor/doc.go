// Package executor runs a graph of operators as parallel subtasks joined by
// bounded channels.
//
// A Graph is a list of nodes; each node runs as Parallelism subtasks, each
// with its own Operator. Edges carry Messages: batches of encoded elements,
// Watermark(t), Barrier(n) and end-of-input, all in-band and in order per
// channel. A channel is one (producer subtask, consumer subtask, input port)
// triple; every consumer subtask tracks its channels in a gate:
//
//   - a port's watermark is the minimum over its channels, and moves only
//     forward; the operator hears of every advance (a watermarkmgr.Manager
//     per port does the arithmetic);
//   - a barrier is aligned: a channel that delivered Barrier(n) is held back
//     (its later messages queued) until every live channel has delivered it,
//     then the operator snapshots, the barrier goes downstream and the
//     subtask acknowledges n to the coordinator exactly once. Once the
//     checkpoint's aligned timeout passes (at once in unaligned mode) the
//     subtask snapshots and forwards without waiting, and records the data
//     still arriving ahead of the barrier as in-flight data (a
//     Checkpointer receives snapshots and records; see checkpoint.go);
//   - a subtask whose inputs all ended but that runs on (an SDF resuming in
//     Finish) has barriers injected as a source does, and polls for them;
//   - when every channel has ended, the operator finishes and the subtask
//     ends its outputs.
//
// A restored graph (Graph.Restore, restore.go) starts each subtask where a
// checkpoint left it, before its first message: a source reads its
// recorded position (Injector.Restored) and one that had ended does not
// run; an operator gets its snapshot back (StateRestorer), then each input
// channel its recorded watermark, then the in-flight data an unaligned
// barrier had overtaken, then the watermarks that were in flight with it.
// The store's records are the runner's to import first. An operator that
// wraps another forwards every optional capability (Capabilities).
//
// Because the channels are bounded, a slow operator back-pressures its
// producers. The first error of any subtask cancels the whole graph.
package executor
