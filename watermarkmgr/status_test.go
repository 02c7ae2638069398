package watermarkmgr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusScripts runs the scenarios in testdata/status: channel
// statuses (Flink's WatermarkStatus) as a consumer combines them, and what
// a producer announces (see runScript for the commands).
func TestStatusScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/status/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/status: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, string(b)) })
	}
}

// TestStatusOf checks a subtask's status over several ports: idle only
// when every live input of every port is idle.
func TestStatusOf(t *testing.T) {
	a, b := New(2), New(1)
	ports := []*Manager{a, b}
	check := func(want Status) {
		t.Helper()
		if got := StatusOf(ports); got != want {
			t.Errorf("StatusOf = %v, want %v", got, want)
		}
	}
	check(StatusActive)
	must(t, a.Idle(0))
	must(t, a.Idle(1))
	check(StatusActive) // port b is live and active
	must(t, b.Idle(0))
	check(StatusIdle)
	must(t, b.End(0))
	check(StatusIdle) // an ended port has nothing to say
	must(t, a.Active(1))
	check(StatusActive)
	must(t, a.End(0))
	must(t, a.End(1))
	check(StatusActive) // everything ended
	if got := StatusOf(nil); got != StatusActive {
		t.Errorf("StatusOf(nil) = %v, want active", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
