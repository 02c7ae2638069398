package secure

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// MinTokenLen is the shortest token a token file may hold: a token is a
// password no person types, and a short one can be guessed.
const MinTokenLen = 16

// Tokens is the set of bearer tokens a server accepts, read from a file
// that holds one per line. Several lines let tokens rotate without a
// window in which clients are refused: add the new token, Reload, move the
// clients over, remove the old one, Reload. Safe for concurrent use.
type Tokens struct {
	path string
	// digests are the SHA-256 sums of the tokens: compared in constant
	// time, they are all of one length whatever the tokens' lengths.
	digests atomic.Pointer[[][sha256.Size]byte]
}

// LoadTokens reads a token file (ParseTokens says what it may hold).
func LoadTokens(path string) (*Tokens, error) {
	t := &Tokens{path: path}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// TokensOf is a Tokens with a fixed list, for programs that embed a
// server. Each token must pass ParseTokens' checks.
func TokensOf(tokens ...string) (*Tokens, error) {
	t := &Tokens{}
	ds, err := digests([]byte(strings.Join(tokens, "\n")))
	if err != nil {
		return nil, fmt.Errorf("secure: tokens: %w", err)
	}
	t.digests.Store(&ds)
	return t, nil
}

// Reload reads the file again. On error the tokens in use stay.
func (t *Tokens) Reload() error {
	if t.path == "" {
		return nil
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return fmt.Errorf("secure: token file: %w", err)
	}
	ds, err := digests(data)
	if err != nil {
		return fmt.Errorf("secure: token file %s: %w", t.path, err)
	}
	t.digests.Store(&ds)
	return nil
}

// Valid reports whether token is one of the set. It compares the token's
// digest with every token's, without stopping at a match, so its time
// does not tell how much of a token was right, nor which one matched.
func (t *Tokens) Valid(token string) bool {
	if token == "" {
		return false
	}
	d := sha256.Sum256([]byte(token))
	match := 0
	for _, s := range *t.digests.Load() {
		match |= subtle.ConstantTimeCompare(d[:], s[:])
	}
	return match == 1
}

func digests(data []byte) ([][sha256.Size]byte, error) {
	toks, err := ParseTokens(data)
	if err != nil {
		return nil, err
	}
	ds := make([][sha256.Size]byte, len(toks))
	for i, tok := range toks {
		ds[i] = sha256.Sum256([]byte(tok))
	}
	return ds, nil
}

// ParseTokens reads a token file: one token a line; blank lines and lines
// that start with # are skipped; spaces around a token are not part of it.
// A token is at least MinTokenLen printable ASCII characters without
// spaces (it travels in an HTTP header). A file without any token is an
// error: a server told to check tokens must not accept none in silence.
func ParseTokens(data []byte) ([]string, error) {
	var toks []string
	for i, line := range bytes.Split(data, []byte("\n")) {
		tok := strings.TrimSpace(string(line))
		if tok == "" || strings.HasPrefix(tok, "#") {
			continue
		}
		if err := checkToken(tok); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		toks = append(toks, tok)
	}
	if len(toks) == 0 {
		return nil, errors.New("no token in it (one a line; # starts a comment)")
	}
	return toks, nil
}

func checkToken(tok string) error {
	for _, c := range []byte(tok) {
		if c < 0x21 || c > 0x7e {
			return fmt.Errorf("a token is printable ASCII without spaces; this one has byte %#x", c)
		}
	}
	if len(tok) < MinTokenLen {
		// The token itself is never quoted in an error: errors are logged.
		return fmt.Errorf("a token of %d characters is too short to be secret: want %d or more (e.g. openssl rand -hex 32)", len(tok), MinTokenLen)
	}
	return nil
}

// ReadToken reads the token a client sends: the first token of a file in
// the format of ParseTokens.
func ReadToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("secure: token file: %w", err)
	}
	toks, err := ParseTokens(data)
	if err != nil {
		return "", fmt.Errorf("secure: token file %s: %w", path, err)
	}
	return toks[0], nil
}
