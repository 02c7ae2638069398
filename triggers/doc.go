// Package triggers holds the pure logic of Beam's windowing model that the
// runner applies when it groups: window merging now; trigger state
// machines, panes, accumulation and allowed lateness as they arrive
// (issue 5). It does no I/O and knows nothing of the executor: callers pass
// windows and times in and read decisions out, so every rule is tested with
// tables.
package triggers
