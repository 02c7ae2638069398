// Package pgtest gives tests a PostgreSQL database: the server
// internal/tools/postgres.sh runs (make postgres), whose URL is in
// $WEIR_PG_URL, and a schema of its own per test.
//
// Without $WEIR_PG_URL a test is skipped, unless WEIR_REQUIRE_POSTGRES=1
// (as `make test` sets it), when it fails: a run that means to test the
// sink cannot pass by skipping it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URL returns the server's URL, or skips (or fails) the test.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("WEIR_PG_URL")
	if u != "" {
		return u
	}
	const how = "start one with `make postgres` and set WEIR_PG_URL to the URL it prints"
	if os.Getenv("WEIR_REQUIRE_POSTGRES") == "1" {
		t.Fatalf("no PostgreSQL: WEIR_PG_URL is unset; WEIR_REQUIRE_POSTGRES=1 asks for the PostgreSQL tests to run: %s", how)
		return ""
	}
	t.Skipf("no PostgreSQL: WEIR_PG_URL is unset; %s (WEIR_REQUIRE_POSTGRES=1 turns this skip into a failure)", how)
	return ""
}

// DB is a test's schema in the test server.
type DB struct {
	// URL connects with the schema first on the search path, so
	// unqualified names are the test's.
	URL string
	// Schema is the schema's name.
	Schema string
	// Conn is a connection for the test's own queries.
	Conn *pgx.Conn
}

// New makes a schema of its own for the test, dropped when it ends.
func New(t testing.TB) *DB {
	t.Helper()
	base := URL(t)
	ctx := context.Background()
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	schema := "t_" + hex.EncodeToString(r[:])
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", base, err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: WEIR_PG_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db := &DB{URL: u.String(), Schema: schema}
	if db.Conn, err = pgx.Connect(ctx, db.URL); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		db.Conn.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
		admin.Close(ctx)
	})
	return db
}

// Exec runs statements, failing the test on an error.
func (db *DB) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Strings returns the rows of a query, each printed with fmt.Sprint of
// its values joined by spaces.
func (db *DB) Strings(t testing.TB, sql string, args ...any) []string {
	t.Helper()
	rows, err := db.Conn.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatalf("pgtest: %s: %v", sql, err)
		}
		s := ""
		for i, v := range vals {
			if i > 0 {
				s += " "
			}
			s += fmt.Sprint(v)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
	return out
}
