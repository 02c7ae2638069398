// Package watermarkmgr computes a subtask's input and output watermarks.
//
// A Manager belongs to one subtask (or to one input port of it) and is driven
// by the goroutine that owns the subtask; it does no I/O, starts no
// goroutines and takes no locks. The executor's gate feeds it the watermarks
// that arrive in-band on each input channel; an SDK stage also feeds it
// holds. The caller's loop is:
//
//  1. For each event, call the matching method: Advance when a channel
//     delivers Watermark(t), Active when it delivers data, Idle when the
//     caller's idleness policy decides a channel has gone quiet, End on
//     end-of-input; SetHold and ReleaseHold as pending elements, timers and
//     SDF watermark estimates come and go.
//  2. Call Emit. If it reports an advance, forward the returned watermark
//     downstream in-band; otherwise send nothing. Several events may be
//     applied before one Emit: the output is only fixed when it is emitted,
//     so a hold added together with an input advance still counts.
//
// The rules:
//
//   - Each input has a watermark that only moves forward; an Advance behind
//     it is ignored.
//   - The input watermark is the minimum over inputs that are neither idle
//     nor ended. An ended input is at +inf and no longer holds the minimum;
//     once every input has ended the input watermark is +inf.
//   - An idle input is left out of the minimum, so one quiet channel does not
//     stall the subtask. It is counted again as soon as it delivers data or a
//     watermark.
//   - The input watermark never moves backwards. An input that comes back
//     from idleness behind the input watermark therefore holds it where it
//     is until it catches up; it does not pull it back. Its elements behind
//     the input watermark are late, which is the caller's business (count
//     them, drop them or route them per allowed lateness).
//   - While every input that has not ended is idle, there is no minimum to
//     take and the input watermark stays where it is. It is not flushed to
//     the largest idle watermark, as Flink does: an idle channel asserted
//     completeness only up to its own watermark. AllIdle tells the caller
//     that its own output is idle, so it can say so downstream instead.
//   - The output watermark is the minimum of the input watermark and every
//     hold, and never moves backwards: once emitted, a hold set behind it,
//     or any out-of-order update, keeps it where it is.
//
// A Manager with no inputs has an input watermark of +inf, so its output is
// its minimum hold: that is how a source reports the watermark of its own
// estimates. It must set a hold before its first Emit.
//
// Sources with splits (Kafka partitions) use two more pieces, also free of
// I/O and clocks (the caller passes processing time in):
//
//   - Splits: per split, a watermark from bounded out-of-orderness and an
//     activity clock for idleness that stops while the split is paused; the
//     reader's output watermark is a Manager over its splits.
//   - Group: a watermark alignment group over the splits of several
//     readers and sources. Every interval it samples them, announces the
//     minimum plus the maximum drift, and decides which single splits to
//     pause and resume. Its documentation lists the rules and the Flink
//     hangs each one prevents.
package watermarkmgr
