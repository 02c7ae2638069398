package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-runner/weir/internal/pgtest"
)

// TestBillingToPostgres runs the example with --pg on in-process weir:
// the billing table it prints from the panes, and the table in
// PostgreSQL the sink upserted them into, must list the same counts.
func TestBillingToPostgres(t *testing.T) {
	db := pgtest.New(t)
	out := filepath.Join(t.TempDir(), "stdout")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	stdout, args := os.Stdout, os.Args
	os.Stdout, os.Args = f, []string{"adclicks", "--runner=weir", "--pg=" + db.URL, "--pg_table=billing"}
	defer func() { os.Stdout, os.Args = stdout, args }()
	flag.CommandLine.Parse(os.Args[1:])
	main()
	f.Close()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	printed := section(string(b), "billing (")
	stored := section(string(b), "billing table billing in PostgreSQL")
	if len(printed) == 0 || !slices.Equal(printed, stored) {
		t.Errorf("printed billing %q\nbut the PostgreSQL table holds %q", printed, stored)
	}
	if n := db.Strings(t, `SELECT count(*) FROM billing WHERE pane_index > 0`); n[0] == "0" {
		t.Errorf("no late pane replaced an on-time one; the example has late clicks")
	}
}

// section returns the "campaign start clicks" of the lines after the
// line starting with head, up to the next unindented line.
func section(s, head string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, head):
			in = true
		case in && strings.HasPrefix(line, "  "):
			f := strings.Fields(line)
			out = append(out, strings.Join(f[:3], " "))
		case in:
			return out
		}
	}
	return out
}
