package secure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	tokA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tokB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestParseTokens(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       []string
		err        string
	}{
		{"one", tokA + "\n", []string{tokA}, ""},
		{"several, comments, blanks, spaces", "# rotated 2026-12-01\n\n  " + tokA + "  \n" + tokB + "\r\n", []string{tokA, tokB}, ""},
		{"none", "# nothing\n\n", nil, "no token"},
		{"empty", "", nil, "no token"},
		{"short", "abc\n", nil, "line 1: a token of 3 characters is too short"},
		{"space inside", tokA + " x\n", nil, "line 1: a token is printable ASCII"},
		{"non-ASCII", "ééééééééééééééééé\n", nil, "printable ASCII"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseTokens([]byte(c.file))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// A short token is refused without being quoted: errors are logged.
func TestParseTokensDoesNotQuoteTheToken(t *testing.T) {
	_, err := ParseTokens([]byte("hunter2secret\n"))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err %v: want a refusal that does not quote the token", err)
	}
}

func writeTokens(t *testing.T, path string, toks ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(toks, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Rotation: both tokens are valid while the file holds both; a Reload
// after the old one is removed refuses it; a bad file keeps what was
// loaded.
func TestTokensRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, tokA)
	toks, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, want map[string]bool) {
		t.Helper()
		for tok, ok := range want {
			if got := toks.Valid(tok); got != ok {
				t.Errorf("%s: Valid(%.4s…) = %v, want %v", step, tok, got, ok)
			}
		}
	}
	check("A only", map[string]bool{tokA: true, tokB: false, "": false, tokA[:20]: false, tokA + "a": false})
	writeTokens(t, path, tokA, tokB)
	if err := toks.Reload(); err != nil {
		t.Fatal(err)
	}
	check("A and B", map[string]bool{tokA: true, tokB: true})
	writeTokens(t, path, tokB)
	if err := toks.Reload(); err != nil {
		t.Fatal(err)
	}
	check("B only", map[string]bool{tokA: false, tokB: true})
	writeTokens(t, path, "short")
	if err := toks.Reload(); err == nil {
		t.Fatal("Reload of a bad file: no error")
	}
	check("after a bad reload", map[string]bool{tokA: false, tokB: true})
}

func TestReadTokenTakesTheFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, "# mine", tokB, tokA)
	got, err := ReadToken(path)
	if err != nil || got != tokB {
		t.Fatalf("ReadToken = %.4s…, %v; want the first token", got, err)
	}
}
