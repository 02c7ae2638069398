package secure

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The first refusal is logged, the next within a minute only counted, and
// the first after it logged with that count.
func TestRefusalLogIsSampled(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	r := newRefusalLog(slog.New(slog.NewTextHandler(&buf, nil)), func() time.Time { return now })
	lines := func() []string { return strings.Split(strings.TrimSpace(buf.String()), "\n") }

	r.note("job service", "10.0.0.1:5000", "", "/x/Prepare", "no bearer token")
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], "peer=10.0.0.1:5000") || !strings.Contains(l[0], `reason="no bearer token"`) {
		t.Fatalf("first refusal: %q", l)
	}
	for i := range 5 {
		now = now.Add(time.Duration(i+1) * time.Second)
		r.note("job service", "10.0.0.1:5000", "", "/x/Prepare", "the token is not accepted")
	}
	if l := lines(); len(l) != 1 {
		t.Fatalf("refusals within a minute were logged: %q", l)
	}
	now = now.Add(time.Minute)
	r.note("http", "10.0.0.2:6000", "CN=x", "GET /metrics", "no bearer token")
	l := lines()
	if len(l) != 2 || !strings.Contains(l[1], "also_refused_since_last_line=5") || !strings.Contains(l[1], `client_certificate="CN=x"`) {
		t.Fatalf("after a minute: %q, want a second line counting 5", l)
	}
}
