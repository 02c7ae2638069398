// Package pgsink is the runner's side of weir's exactly-once PostgreSQL
// write (pgio.WriteURN): it decodes the transform at submission (Plan) and
// runs one Sink per subtask under a twophase.Driver, over pgx.
//
// At submission, NewPlan checks the configuration (pgio.WriteConfig), the
// connection string's shape, and the input's row schema: each field must
// be one the row decoder reads (row.go) and go to a column; nothing here
// needs the database. The Driver then calls each subtask's Sink:
//
//	Open:     connect (retried while the server cannot be reached); check
//	          the table, its columns, the key's unique index, privileges;
//	          make the marker table if missing, drop old runs' markers
//	Write:    decode each row (a bad one fails the job before any
//	          checkpoint holds it) and stage its bytes in the store
//	Prepare:  the epoch's committable is its row count; the rows are
//	          in the store, which the checkpoint exports
//	Commit:   one transaction: lock and read the markers of the
//	          committables' runs, write the rows of every epoch a marker
//	          does not cover (COPY; for an upsert, COPY into the session's
//	          staging table, then INSERT ... ON CONFLICT), move the markers
//	Abort:    nothing: the server aborted the crashed run's transaction
//	          when its connection ended
//	Close:    close the connection
//
// A commit's errors are classified (errors.go): a lost connection or a
// busy server is retried by the Driver on a new connection; an error
// about the rows, the table or the privileges is Permanent and fails the
// job. docs/connectors.md has the user's view.
package pgsink
