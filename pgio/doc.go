// Package pgio adds weir's native exactly-once PostgreSQL sink to a Beam
// Go pipeline.
//
// Like packages kafkaio and fileio, the transform is runner-native: the
// pipeline carries weir's URN (WriteURN) with the JSON of WriteConfig as
// payload, and weir writes the rows itself (package pgsink, over pgx).
// Each element is a schema row (a Go struct, whose fields Beam's row
// coder encodes; Python's NamedTuples and Java's Rows arrive the same
// way through weir's expansion service) and becomes one table row, its
// fields the columns. Rows wait in the job's checkpointed store until the
// checkpoint that covers them completes; then one database transaction
// per sink subtask writes them (INSERT, or INSERT ... ON CONFLICT (key)
// DO UPDATE) together with a marker row that names the run and epoch, so
// a restored job never writes an epoch twice. Other runners refuse the
// URN.
//
// This package holds what a pipeline needs and imports no database
// driver; docs/connectors.md has the whole story.
package pgio
