package executor

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// notOnOperators are the interfaces of this package that the executor or
// the runner assert on something other than an operator, with the reason
// each is not a capability wrappers of operators must forward.
var notOnOperators = map[string]string{
	"EndListener":                       "asserted on sources (graphEnded), which nothing wraps",
	"seqCounter":                        "asserted on a triggered group's window store",
	"interface{ SetSeq(uint64) error }": "asserted on a triggered group's window store",
}

// TestCapabilitiesListed reads the executor's, the runner's and
// twophase's code for type assertions and type switches to interfaces of
// this package, and fails for any that is neither in Capabilities nor
// known to be asserted on something else (notOnOperators): so a new
// optional interface cannot be added without wrappers of operators
// (twophase.StableInput) being made to forward it.
func TestCapabilitiesListed(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range Capabilities {
		listed[c.Name()] = true
	}
	ifaces := packageInterfaces(t, ".")
	found := map[string]bool{}
	for _, dir := range []string{".", "../runner", "../twophase"} {
		for name, where := range assertedInterfaces(t, dir, ifaces) {
			found[name] = true
			if !listed[name] && notOnOperators[name] == "" {
				t.Errorf("%s asserts %s, which is neither in executor.Capabilities nor in notOnOperators: "+
					"if operators may implement it, list it, and make twophase.StableInput forward it", where, name)
			}
		}
	}
	for name := range listed {
		if !found[name] {
			t.Errorf("Capabilities lists %s, but nothing asserts it", name)
		}
	}
	for name := range notOnOperators {
		if !found[name] {
			t.Errorf("notOnOperators lists %s, but nothing asserts it", name)
		}
	}
}

// packageInterfaces returns the names of the interface types declared in
// the package in dir.
func packageInterfaces(t *testing.T, dir string) map[string]bool {
	out := map[string]bool{}
	for _, f := range parseDir(t, dir) {
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if _, ok := ts.Type.(*ast.InterfaceType); ok {
					out[ts.Name.Name] = true
				}
			}
			return true
		})
	}
	return out
}

// assertedInterfaces returns the interfaces of package executor (named in
// ifaces, or written out) that the code in dir asserts, each with one
// place it does.
func assertedInterfaces(t *testing.T, dir string, ifaces map[string]bool) map[string]string {
	fset := token.NewFileSet()
	out := map[string]string{}
	note := func(typ ast.Expr) {
		name := ""
		switch x := typ.(type) {
		case *ast.Ident:
			if dir == "." && ifaces[x.Name] {
				name = x.Name
			}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Name == "executor" && ifaces[x.Sel.Name] {
				name = x.Sel.Name
			}
		case *ast.InterfaceType:
			if dir == "." {
				var b strings.Builder
				printer.Fprint(&b, fset, x)
				name = strings.Join(strings.Fields(b.String()), " ")
			}
		}
		if name != "" {
			out[name] = fset.Position(typ.Pos()).String()
		}
	}
	for _, f := range parseDirSet(t, dir, fset) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.TypeAssertExpr:
				if x.Type != nil {
					note(x.Type)
				}
			case *ast.TypeSwitchStmt:
				for _, c := range x.Body.List {
					for _, typ := range c.(*ast.CaseClause).List {
						note(typ)
					}
				}
			}
			return true
		})
	}
	return out
}

func parseDir(t *testing.T, dir string) []*ast.File {
	return parseDirSet(t, dir, token.NewFileSet())
}

// parseDirSet parses the non-test Go files of dir.
func parseDirSet(t *testing.T, dir string, fset *token.FileSet) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return slices.Clip(files)
}
