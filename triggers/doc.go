// Package triggers holds the pure logic of Beam's windowing model that the
// runner applies when it groups: window merging, trigger state machines and
// pane numbering. It does no I/O and knows nothing of the executor: callers
// pass windows and times in and read decisions out, so every rule is tested
// with tables.
//
// A Trigger is decoded once from the pipeline's proto (FromProto) and is
// shared; each (key, window) has its own State (Trigger.NewState) and
// PaneTracker. The caller's loop, per (key, window):
//
//  1. On an element: if State.Finished the window is closed and the element
//     is dropped; otherwise buffer it, call OnElement, then ShouldFire.
//  2. On a watermark or processing-time advance: ShouldFire.
//  3. When ShouldFire is true: OnFire, then emit a pane described by
//     PaneTracker.Next (final if State.Finished), if it holds new elements.
//  4. When the watermark passes the window's end plus allowed lateness:
//     emit a final pane if new elements wait, and forget the window.
//  5. With merging windows (sessions), set Context.Merging, and when an
//     element's window merges others, give the merged window OnMerge of
//     their states (and a fresh one for the element's own window) and
//     MergePanes of their pane trackers, then go on with step 1.
//
// The rules are Beam's (the Java ReduceFnRunner's): a trigger that finishes
// closes its window, and elements that arrive later are dropped; triggers
// are evaluated after every element.
package triggers
