package main

import (
	"testing"

	"github.com/weir-runner/weir/internal/pgtest"
)

// TestCrashExactlyOncePostgres is the crash test (crash_test.go) with the
// PostgreSQL sink, on kfake: the window sums go, by plain INSERT, into a
// table without a key, so a window written twice shows as two rows and
// one lost as none. The table must equal the expected window sums
// exactly. It needs the server of `make postgres` (pgtest).
func TestCrashExactlyOncePostgres(t *testing.T) {
	crashTests(t, postgresSink, kfakeCluster)
}

var postgresSink = sink{"postgres", func(t *testing.T, _, _, _ string) ([]string, func() ([]string, error)) {
	db := pgtest.New(t) // a schema of this test's own
	db.Exec(t, `CREATE TABLE window_sums (key text NOT NULL, window_start bigint NOT NULL, sum bigint NOT NULL)`)
	read := func() ([]string, error) {
		return db.Strings(t, `SELECT key || '|' || window_start || '|' || sum FROM window_sums`), nil
	}
	return []string{"--pg=" + db.URL, "--pg_table=window_sums"}, read
}}
