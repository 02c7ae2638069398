// Package timers keeps the user timers of one stateful stage subtask: one
// live timer per family, key, window and tag, ordered by fire time per
// time domain, with the minimum output-timestamp hold they place on the
// stage's output watermark.
//
// It is pure logic. The executor's SDK stage decodes the timers a bundle
// sets (wire.TimerCodec), applies them here, and before passing a
// watermark on takes the timers it makes due and fires them in bundles.
package timers
