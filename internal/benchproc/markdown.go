package benchproc

import (
	"os"
	"strings"
)

// WriteSection puts section into the markdown file at path in place of
// the part it replaces, keeping the rest. The Go load tests (heading "")
// own the file's top, up to its first second-level heading; any other
// section owns its heading up to the next second-level heading, and a
// new one goes right after the top, before the other benchmarks'
// sections (bench-backfill, bench-checkpoint). Notes written by hand
// under a table belong to the run they describe and go with it.
func WriteSection(path, heading, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	top, rest := splitSections(string(old))
	section = strings.TrimRight(section, "\n") + "\n"
	var parts []string
	if heading == "" {
		parts = append([]string{section}, rest...)
	} else {
		parts = []string{top}
		placed := false
		for _, r := range rest {
			if FirstLine(r) == heading {
				r, placed = section, true
			}
			parts = append(parts, r)
		}
		if !placed {
			parts = append([]string{top, section}, rest...)
		}
	}
	for i := range parts {
		parts[i] = strings.TrimRight(parts[i], "\n") + "\n"
	}
	return os.WriteFile(path, []byte(strings.Join(parts, "\n")), 0o644)
}

// splitSections cuts markdown at its second-level headings: the text
// before the first, and each section from its heading on.
func splitSections(md string) (top string, sections []string) {
	starts := []int{}
	for i := 0; i < len(md); {
		if strings.HasPrefix(md[i:], "## ") {
			starts = append(starts, i)
		}
		j := strings.IndexByte(md[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	if len(starts) == 0 {
		return md, nil
	}
	top = md[:starts[0]]
	for k, s := range starts {
		end := len(md)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		sections = append(sections, md[s:end])
	}
	return top, sections
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
