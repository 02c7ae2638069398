package executor

import (
	"fmt"
	"strings"
	"testing"
)

// TestLiftSwitch drives the precombine/convert choice with bundle counts.
// Each step is a finished precombined bundle ("f in/out"), a running one's
// counts so far ("r in/out"), or a number of bundles to start ("n 5");
// want is the modes of the bundles started so far, P for precombine and C
// for convert, and what running answered (s: stop, g: go on).
func TestLiftSwitch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []string
		want  string
	}{
		{"repeating keys keep precombining", []string{"n 1", "f 4096/10", "n 3"}, "PPPP"},
		{"unique keys convert", []string{"n 1", "f 4096/4096", "n 3"}, "PCCC"},
		{"evidence gathers over small bundles", []string{"n 1", "f 1100/1100", "n 1", "f 1100/1100", "n 1", "f 1100/1100", "n 1", "f 1100/1100", "n 2"}, "PPPPCC"},
		{"exactly the keep fraction still precombines", []string{"f 5000/4000", "n 2"}, "PP"},
		{"a probe every fifth bundle at first", []string{"f 4096/4096", "n 10"}, "CCCCPCCCCP"},
		{"agreeing probes double the interval", []string{"f 4096/4096", "n 5", "f 4096/4000", "n 10"}, "CCCCPCCCCCCCCPC"},
		{"a probe that reduces switches back", []string{"f 4096/4096", "n 5", "f 4096/100", "n 3"}, "CCCCPPPP"},
		{"running counts decide once large enough", []string{"r 10000/10000", "n 1", "r 20000/18500", "n 2"}, "gPsCC"},
		{"running counts that reduce let it run", []string{"r 50000/200", "n 2"}, "gPP"},
		{"running precombined probe stops when converting", []string{"f 4096/4096", "r 30000/29000", "n 1"}, "sC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l liftSwitch
			var got strings.Builder
			for _, st := range tc.steps {
				var op string
				var a, b int64
				if strings.HasPrefix(st, "n") {
					if _, err := sscan(st, &op, &a); err != nil {
						t.Fatal(err)
					}
					for range a {
						if l.precombine() {
							got.WriteByte('P')
						} else {
							got.WriteByte('C')
						}
					}
					continue
				}
				if _, err := sscan(strings.Replace(st, "/", " ", 1), &op, &a, &b); err != nil {
					t.Fatal(err)
				}
				switch op {
				case "f":
					l.finished(a, b)
				case "r":
					if l.running(a, b) {
						got.WriteByte('s')
					} else {
						got.WriteByte('g')
					}
				}
			}
			if got.String() != tc.want {
				t.Errorf("got %s, want %s", got.String(), tc.want)
			}
		})
	}
}

func sscan(s string, args ...any) (int, error) { return fmt.Sscan(s, args...) }
