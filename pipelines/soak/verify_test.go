package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheck: exact output passes, in any order of panes; a lost pane, a
// lost last pane, a doubled pane, a wrong sum, a missing window and a
// window never produced are each found and counted as what they are.
func TestCheck(t *testing.T) {
	a, b := windowKey{"k001", 10_000}, windowKey{"k002", 10_000}
	want := map[windowKey]agg{a: {3, 60}, b: {1, 7}}
	exact := func() map[windowKey][]pane {
		return map[windowKey][]pane{
			a: {pn(1, 10, 1), pn(3, 60, 3), pn(2, 30, 2)}, // early, late, on time: read out of order
			b: {pn(1, 7, 1)},
		}
	}
	for _, tc := range []struct {
		name                          string
		mutate                        func(map[windowKey][]pane)
		lost, doubled, wrong, unknown int
	}{
		{"exact", func(map[windowKey][]pane) {}, 0, 0, 0, 0},
		{"a pane lost", func(g map[windowKey][]pane) { g[a] = []pane{pn(1, 10, 1), pn(3, 60, 3)} }, 1, 0, 0, 0},
		{"the last pane lost", func(g map[windowKey][]pane) { g[a] = g[a][:1] }, 1, 0, 0, 0},
		{"a pane doubled", func(g map[windowKey][]pane) { g[b] = append(g[b], pn(1, 7, 1)) }, 0, 1, 0, 0},
		{"a record counted twice", func(g map[windowKey][]pane) { g[b] = []pane{pn(2, 14, 1)} }, 0, 0, 1, 0},
		{"a wrong sum", func(g map[windowKey][]pane) { g[b] = []pane{pn(1, 8, 1)} }, 0, 0, 1, 0},
		{"a window lost", func(g map[windowKey][]pane) { delete(g, b) }, 1, 0, 0, 0},
		{"a window never produced", func(g map[windowKey][]pane) { g[windowKey{"k003", 0}] = []pane{pn(1, 1, 1)} }, 0, 0, 0, 1},
		{"panes numbered out of order", func(g map[windowKey][]pane) { g[a] = []pane{pn(1, 10, 1), pn(3, 60, 2), pn(2, 30, 3)} }, 0, 0, 0, 0},
		{"a pane fired twice", func(g map[windowKey][]pane) { g[a] = []pane{pn(1, 10, 1), pn(1, 10, 2), pn(3, 60, 3)} }, 0, 1, 0, 0},
		{"the fullest pane short", func(g map[windowKey][]pane) { g[a] = []pane{pn(2, 30, 1), pn(1, 10, 2)} }, 1, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := exact()
			tc.mutate(got)
			o := check(want, got)
			if o.lost != tc.lost || o.doubled != tc.doubled || o.wrong != tc.wrong || o.unknown != tc.unknown {
				t.Errorf("lost %d doubled %d wrong %d unknown %d (%v), want %d %d %d %d", o.lost, o.doubled, o.wrong, o.unknown,
					o.problems, tc.lost, tc.doubled, tc.wrong, tc.unknown)
			}
			if reordered := tc.name == "panes numbered out of order" || tc.name == "the fullest pane short"; (o.reordered == 1) != reordered {
				t.Errorf("reordered %d", o.reordered)
			}
			if o.ok() != (tc.lost+tc.doubled+tc.wrong+tc.unknown == 0) || (!o.ok() && len(o.problems) == 0) {
				t.Errorf("ok %v with problems %v", o.ok(), o.problems)
			}
		})
	}
}

func pn(count, sum, number int64) pane { return pane{count: count, sum: sum, number: number} }

func TestParsePane(t *testing.T) {
	wk, p, err := parsePane([]byte("k007"), []byte("1700000000000|12|345|4|LATE|3"))
	if err != nil || wk != (windowKey{"k007", 1700000000000}) || p != (pane{12, 345, 4, "LATE"}) {
		t.Errorf("parsePane = %v %v %v", wk, p, err)
	}
	if _, _, err := parsePane([]byte("k"), []byte("sentinel 1")); err == nil {
		t.Error("parsePane took a record that is not a pane")
	}
}

// TestWriteSection: the section replaces its old text up to the next
// heading of its level, keeps what is around it, and is appended to a
// file without one.
func TestWriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	doc := "# R\n\n## A\n\na\n\n## Soak\n\nold\n\n### sub\n\nold too\n\n## B\n\nb\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSection(path, "## Soak", "## Soak\n\nnew\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "# R\n\n## A\n\na\n\n## Soak\n\nnew\n\n## B\n\nb\n"; string(got) != want {
		t.Errorf("replaced:\n%s\nwant:\n%s", got, want)
	}
	if err := os.WriteFile(path, []byte("# R\n\n## A\n\na\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSection(path, "## Soak", "## Soak\n\nnew\n"); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(path)
	if want := "# R\n\n## A\n\na\n\n## Soak\n\nnew\n"; string(got) != want {
		t.Errorf("appended:\n%s\nwant:\n%s", got, want)
	}
}

// TestCheckShort: a window whose last pane lacks records is listed with
// what it lacks, for explain; other problems are not.
func TestCheckShort(t *testing.T) {
	a, b := windowKey{"k001", 10_000}, windowKey{"k002", 10_000}
	want := map[windowKey]agg{a: {3, 60}, b: {1, 7}}
	got := map[windowKey][]pane{a: {pn(1, 10, 1), pn(2, 38, 2)}, b: {pn(2, 14, 1)}}
	o := check(want, got)
	if len(o.short) != 1 || o.short[0] != (shortWindow{a, agg{1, 22}}) {
		t.Errorf("short = %v, want %v lacking one record of 22", o.short, a)
	}
}

// TestExplainOne: of a window lacking one record, the records of the
// missing value are the candidates, each with its partition, offset,
// event time against the window's end, delay and lag behind its
// partition.
func TestExplainOne(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	recs := []inputRecord{
		{partition: 1, offset: 7, value: 22, event: start.Add(9 * time.Second), produced: start.Add(10 * time.Second)},
		{partition: 1, offset: 8, value: 5, event: start.Add(9500 * time.Millisecond)},
		{partition: 1, offset: 9, value: 22, event: start.Add(2 * time.Second), produced: start.Add(15 * time.Second), behindNewer: 7500 * time.Millisecond},
	}
	got := explainOne(shortWindow{windowKey{"k004", start.UnixMilli()}, agg{1, 22}}, recs, 10*time.Second)
	for _, w := range []string{"k004", "3 records in the input", "2 candidates",
		"[p1@7 event -1s to the window's end, produced 1s after its event time, 0s behind its partition's newest]",
		"[p1@9 event -8s to the window's end, produced 13s after its event time, 7.5s behind its partition's newest]"} {
		if !strings.Contains(got, w) {
			t.Errorf("explainOne = %q, lacks %q", got, w)
		}
	}
	if strings.Contains(got, "p1@8") {
		t.Errorf("explainOne = %q: a record of another value is a candidate", got)
	}
}
