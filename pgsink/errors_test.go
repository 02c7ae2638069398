package pgsink

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weir-runner/weir/twophase"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err                  error
		permanent, reconnect bool
	}{
		{&pgconn.PgError{Code: "08006"}, false, true},  // connection failure
		{&pgconn.PgError{Code: "57P01"}, false, true},  // admin shutdown
		{&pgconn.PgError{Code: "53300"}, false, false}, // too many connections
		{&pgconn.PgError{Code: "40001"}, false, false}, // serialization failure
		{&pgconn.PgError{Code: "40P01"}, false, false}, // deadlock
		{&pgconn.PgError{Code: "55P03"}, false, false}, // lock not available
		{&pgconn.PgError{Code: "23505"}, true, false},  // unique violation
		{&pgconn.PgError{Code: "22003"}, true, false},  // numeric out of range
		{&pgconn.PgError{Code: "42P01"}, true, false},  // undefined table
		{&pgconn.PgError{Code: "28P01"}, true, false},  // bad password
		{fmt.Errorf("copy: %w", &pgconn.PgError{Code: "42703"}), true, false},
		{io.ErrUnexpectedEOF, false, true},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false, true},
		{twophase.Permanent(errors.New("bad row")), true, false},
	} {
		err, reconnect := classify(c.err)
		if twophase.IsPermanent(err) != c.permanent || reconnect != c.reconnect {
			t.Errorf("%v: permanent %v, reconnect %v; want %v, %v", c.err, twophase.IsPermanent(err), reconnect, c.permanent, c.reconnect)
		}
	}
}
