package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// OutEnv names the folder each suite run records its results in; unset,
// nothing is recorded.
const OutEnv = "WEIR_CONFORMANCE_OUT"

// Record is one connector's results: pass or fail by case.
type Record struct {
	Connector string          `json:"connector"`
	Kind      string          `json:"kind"` // "sink" or "source"
	Cases     map[string]bool `json:"cases"`
}

type recorder struct{ rec Record }

func newRecorder(name, kind string) *recorder {
	return &recorder{rec: Record{Connector: name, Kind: kind, Cases: map[string]bool{}}}
}

func (r *recorder) add(name string, ok bool) { r.rec.Cases[name] = ok }

// write records the results in $WEIR_CONFORMANCE_OUT, if set. A run of
// some cases only (go test -run) records nothing: the table is of whole
// runs.
func (r *recorder) write(t *testing.T) {
	dir := os.Getenv(OutEnv)
	if dir == "" {
		return
	}
	want := len(SinkCases())
	if r.rec.Kind == "source" {
		want = len(SourceCases())
	}
	if len(r.rec.Cases) != want {
		t.Logf("conformance: %s ran %d of %d cases; not recorded", r.rec.Connector, len(r.rec.Cases), want)
		return
	}
	b, err := json.MarshalIndent(r.rec, "", "  ")
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		name := strings.NewReplacer("/", "_", " ", "_", "(", "", ")", "").Replace(r.rec.Kind + "-" + r.rec.Connector)
		err = os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644)
	}
	if err != nil {
		t.Errorf("conformance: record results: %v", err)
	}
}

// ReadRecords reads the records in dir.
func ReadRecords(dir string) ([]Record, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Connector, b.Connector) })
	return out, nil
}

// Render writes the tables of records as Markdown: a row per case, a
// column per connector, sinks then sources.
func Render(recs []Record) string {
	var b strings.Builder
	for _, kind := range []string{"sink", "source"} {
		var cols []Record
		for _, r := range recs {
			if r.Kind == kind {
				cols = append(cols, r)
			}
		}
		if len(cols) == 0 {
			continue
		}
		type row struct{ name, doc string }
		var rows []row
		if kind == "sink" {
			for _, c := range SinkCases() {
				rows = append(rows, row{c.Name, c.Doc})
			}
		} else {
			for _, c := range SourceCases() {
				rows = append(rows, row{c.Name, c.Doc})
			}
		}
		fmt.Fprintf(&b, "\n| %s case |", kind)
		for _, c := range cols {
			fmt.Fprintf(&b, " %s |", c.Connector)
		}
		b.WriteString(" what it checks |\n|---|")
		for range cols {
			b.WriteString("---|")
		}
		b.WriteString("---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| `%s` |", r.name)
			for _, c := range cols {
				ok, ran := c.Cases[r.name]
				switch {
				case !ran:
					b.WriteString(" – |")
				case ok:
					b.WriteString(" pass |")
				default:
					b.WriteString(" **FAIL** |")
				}
			}
			fmt.Fprintf(&b, " %s |\n", r.doc)
		}
	}
	return b.String()
}
