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
//     subtask acknowledges n to the coordinator exactly once;
//   - when every channel has ended, the operator finishes and the subtask
//     ends its outputs.
//
// Because the channels are bounded, a slow operator back-pressures its
// producers. The first error of any subtask cancels the whole graph.
package executor
