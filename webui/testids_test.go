package webui

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// documentedTestIDs returns the values of the TestID constants of
// testids.go, read from its source so that no list is kept twice.
func documentedTestIDs(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "testids.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for i, name := range spec.(*ast.ValueSpec).Names {
				lit, ok := spec.(*ast.ValueSpec).Values[i].(*ast.BasicLit)
				if !strings.HasPrefix(name.Name, "TestID") || !ok {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, v)
			}
		}
	}
	if len(ids) < 20 {
		t.Fatalf("found only %d TestID constants in testids.go", len(ids))
	}
	return ids
}

// TestTestIDs: every documented data-testid is written, quoted, in the
// page's source; the browser test checks the other way (everything the page
// renders is documented).
func TestTestIDs(t *testing.T) {
	var src strings.Builder
	err := fs.WalkDir(assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, p)
		src.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range documentedTestIDs(t) {
		if seen[id] {
			t.Errorf("data-testid %q is documented twice", id)
		}
		seen[id] = true
		if !strings.Contains(src.String(), `'`+id+`'`) && !strings.Contains(src.String(), `"`+id+`"`) {
			t.Errorf("data-testid %q is documented in testids.go but not in static/", id)
		}
	}
}

// TestNoExternalResources: the page works offline and behind a firewall,
// so nothing in it may name another host (the CSP would block it anyway).
func TestNoExternalResources(t *testing.T) {
	// The SVG namespace is a name, not a fetch.
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, p)
		for _, m := range external.FindAllString(string(b), -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s names %s", p, m)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains([]string{"default-src 'self'"}, strings.Split(contentSecurityPolicy, ";")[0]) {
		t.Errorf("the page's CSP does not start with default-src 'self': %s", contentSecurityPolicy)
	}
}
