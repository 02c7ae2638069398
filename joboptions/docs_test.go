package joboptions

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the table in docs/options.md from the declaration")

const (
	docPath   = "../docs/options.md"
	beginMark = "<!-- options table: generated from joboptions by `go test ./joboptions -rewrite` -->"
	endMark   = "<!-- end of options table -->"
)

// table renders the declaration as docs/options.md shows it.
func table() string {
	var b strings.Builder
	b.WriteString("| option | kind | default | what it does |\n| --- | --- | --- | --- |\n")
	group := ""
	for _, d := range All() {
		if d.Group != group {
			group = d.Group
			fmt.Fprintf(&b, "| **%s** | | | |\n", group)
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", d.Name, d.Kind, d.DefaultText(), strings.ReplaceAll(d.Usage, "|", `\|`))
	}
	return b.String()
}

// TestDocsListEveryOption keeps docs/options.md's table the declaration's.
func TestDocsListEveryOption(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s has no table between %q and %q", docPath, beginMark, endMark)
	}
	got, want := s[i+len(beginMark)+1:j], table()
	if got == want {
		return
	}
	if *rewrite {
		if err := os.WriteFile(docPath, []byte(s[:i+len(beginMark)+1]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table is not the declaration's; run go test ./joboptions -rewrite. Want:\n%s", docPath, want)
}
