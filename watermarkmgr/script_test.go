package watermarkmgr

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// runScript drives a Manager with one command per line, in the manner of
// etcd raft's data-driven tests:
//
//	new N                 a Manager with N inputs
//	advance I T           Advance(I, T)
//	active I | idle I | end I
//	hold ID T | release ID
//	emit                  prints "T advanced" or "T unchanged"
//	input | output        prints the watermark
//	allidle               prints AllIdle()
//	status I idle|active  SetStatus(I, ...)
//	status                prints Status()
//	behind I              prints Behind(I)
//	announce T            prints what an Announcer does with watermark T:
//	                      "send" or "keep"
//	announce idle|active  prints what it does with the status: "send",
//	                      "send then T" or "keep"
//
// "cmd => want" checks what the command printed; a command that fails
// prints "error: ...", and "=> error" accepts any error. Times are
// milliseconds, -inf or +inf.
func runScript(t *testing.T, script string) {
	t.Helper()
	var m *Manager
	a := NewAnnouncer()
	for n, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, want, check := strings.Cut(line, "=>")
		f := strings.Fields(cmd)
		want = strings.TrimSpace(want)
		if f[0] == "announce" {
			got := announce(t, a, f)
			if check && got != want {
				t.Errorf("line %d: %s => %s, want %s", n+1, strings.TrimSpace(cmd), got, want)
			}
			continue
		}
		if f[0] != "new" && m == nil {
			t.Fatalf("line %d: %q before new", n+1, line)
		}
		got, err := step(t, &m, f)
		if err != nil {
			got = "error: " + err.Error()
		}
		switch {
		case !check && err != nil:
			t.Errorf("line %d: %s: %v", n+1, cmd, err)
		case !check:
		case want == "error" && err != nil:
		case got != want:
			t.Errorf("line %d: %s => %s, want %s", n+1, strings.TrimSpace(cmd), got, want)
		}
	}
}

func step(t *testing.T, m **Manager, f []string) (string, error) {
	t.Helper()
	arg := func(i int) string {
		if i >= len(f) {
			t.Fatalf("%s: missing argument %d", f[0], i)
		}
		return f[i]
	}
	switch f[0] {
	case "new":
		*m = New(atoi(t, arg(1)))
		return "", nil
	case "advance":
		return "", (*m).Advance(InputID(atoi(t, arg(1))), parseTime(t, arg(2)))
	case "active":
		return "", (*m).Active(InputID(atoi(t, arg(1))))
	case "idle":
		return "", (*m).Idle(InputID(atoi(t, arg(1))))
	case "end":
		return "", (*m).End(InputID(atoi(t, arg(1))))
	case "hold":
		(*m).SetHold(HoldID(arg(1)), parseTime(t, arg(2)))
		return "", nil
	case "release":
		return strconv.FormatBool((*m).ReleaseHold(HoldID(arg(1)))), nil
	case "emit":
		wm, ok := (*m).Emit()
		if ok {
			return formatTime(wm) + " advanced", nil
		}
		return formatTime(wm) + " unchanged", nil
	case "input":
		return formatTime((*m).Input()), nil
	case "output":
		return formatTime((*m).Output()), nil
	case "allidle":
		return strconv.FormatBool((*m).AllIdle()), nil
	case "status":
		if len(f) == 1 {
			return (*m).Status().String(), nil
		}
		return "", (*m).SetStatus(InputID(atoi(t, arg(1))), parseStatus(t, arg(2)))
	case "behind":
		return strconv.FormatBool((*m).Behind(InputID(atoi(t, arg(1))))), nil
	}
	t.Fatalf("unknown command %q", f[0])
	return "", nil
}

// announce runs an "announce" command on a.
func announce(t *testing.T, a *Announcer, f []string) string {
	t.Helper()
	if len(f) != 2 {
		t.Fatalf("announce takes one argument: %v", f)
	}
	switch f[1] {
	case "idle", "active":
		send, wm, ok := a.SetStatus(parseStatus(t, f[1]))
		switch {
		case ok:
			return "send then " + formatTime(wm)
		case send:
			return "send"
		}
		return "keep"
	}
	if a.Watermark(parseTime(t, f[1])) {
		return "send"
	}
	return "keep"
}

func parseStatus(t *testing.T, s string) Status {
	switch s {
	case "idle":
		return StatusIdle
	case "active":
		return StatusActive
	}
	t.Fatalf("bad status %q", s)
	return 0
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("bad number %q: %v", s, err)
	}
	return n
}

func parseTime(t *testing.T, s string) mtime.Time {
	switch s {
	case "-inf":
		return mtime.MinTimestamp
	case "+inf":
		return mtime.MaxTimestamp
	}
	return mtime.Time(atoi(t, s))
}

func formatTime(wm mtime.Time) string {
	switch wm {
	case mtime.MinTimestamp:
		return "-inf"
	case mtime.MaxTimestamp:
		return "+inf"
	}
	return fmt.Sprint(int64(wm))
}
