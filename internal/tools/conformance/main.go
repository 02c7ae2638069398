// Command conformance renders the connector conformance table
// (connector/conformance) from the records a run of the suites left in a
// folder, into a Markdown file between its markers:
//
//	<!-- conformance:begin -->
//	<!-- conformance:end -->
//
// `make conformance` runs the suites and then this.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/weir-runner/weir/connector/conformance"
)

const (
	begin = "<!-- conformance:begin -->"
	end   = "<!-- conformance:end -->"
)

func main() {
	in := flag.String("in", "", "folder of the suites' records")
	doc := flag.String("doc", "docs/connectors.md", "Markdown file whose table is rewritten")
	flag.Parse()
	if err := run(*in, *doc); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func run(in, doc string) error {
	recs, err := conformance.ReadRecords(in)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("no records in %q", in)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s markers", doc, begin, end)
	}
	s = s[:i+len(begin)] + "\n" + conformance.Render(recs) + "\n" + s[j:]
	return os.WriteFile(doc, []byte(s), 0o644)
}
