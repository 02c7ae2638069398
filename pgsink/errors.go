package pgsink

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weir-runner/weir/twophase"
)

// classify marks err Permanent when retrying cannot fix it, and says
// whether the connection must be dropped.
//
// A server error (SQLSTATE) is transient when its class says the
// connection, the server or the transaction's luck failed: 08 connection
// exception, 40 transaction rollback (serialization failure, deadlock),
// 53 insufficient resources (too many connections), 57 operator
// intervention (shutdown, cancel), 58 system error, and 55P03 lock not
// available. Every other class is about the data, the table or the
// privileges (22 data exception, 23 integrity constraint violation, 42
// syntax or access rule, 28 authorization, 3D no such database...), and
// the same rows would fail the same way: Permanent. An error without a
// SQLSTATE is the connection's (refused, reset, timed out): transient,
// and the connection is dropped.
func classify(err error) (out error, reconnect bool) {
	if err == nil {
		return nil, false
	}
	if twophase.IsPermanent(err) {
		return err, false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if transientCode(pe.Code) {
			return err, pe.Code[:2] == "08" || pe.Code[:2] == "57"
		}
		return twophase.Permanent(err), false
	}
	var pce *pgconn.ParseConfigError
	if errors.As(err, &pce) {
		return twophase.Permanent(err), false
	}
	return err, true
}

var permanent = twophase.Permanent

func transientCode(code string) bool {
	if len(code) != 5 {
		return true
	}
	switch code[:2] {
	case "08", "40", "53", "57", "58":
		return true
	}
	return code == "55P03"
}

// hint adds what to do to the errors people meet first; upsert says
// whether the write upserts.
func hint(err error, table string, upsert bool) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "23505":
		if upsert {
			return fmt.Errorf("%w (table %s has a unique index besides the key's)", err, table)
		}
		return fmt.Errorf("%w (a row with this key is in table %s already: mode %q overwrites rows of the same key)", err, table, "upsert")
	case "42501":
		return fmt.Errorf("%w (the connection's user needs INSERT, and UPDATE for upsert, on %s, and may need CREATE on its schema for the marker table)", err, table)
	}
	return err
}
