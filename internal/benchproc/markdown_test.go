package benchproc

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteSection: each benchmark rewrites its own part of the file and
// keeps the others', a new section going after the Go tests' top
// and before the other benchmarks.
func TestWriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	steps := []struct {
		heading, section, want string
	}{
		{"", "# B\n\ngo 1\n", "# B\n\ngo 1\n"},
		{heading, heading + "\n\npy 1\n", "# B\n\ngo 1\n\n" + heading + "\n\npy 1\n"},
		{"", "# B\n\ngo 2\n", "# B\n\ngo 2\n\n" + heading + "\n\npy 1\n"},
	}
	for i, s := range steps {
		if err := WriteSection(path, s.heading, s.section); err != nil {
			t.Fatal(err)
		}
		if got := read(t, path); got != s.want {
			t.Fatalf("step %d: file is\n%q\nwant\n%q", i, got, s.want)
		}
	}

	other := "# B\n\ngo 1\nnotes\n\n## Kafka backfill\n\nk\n"
	if err := os.WriteFile(path, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		"# B\n\ngo 1\nnotes\n\n" + heading + "\n\npy 1\n\n## Kafka backfill\n\nk\n",
		"# B\n\ngo 1\nnotes\n\n" + heading + "\n\npy 2\n\n## Kafka backfill\n\nk\n",
	} {
		if err := WriteSection(path, heading, heading+"\n\npy "+string(rune('1'+i))+"\n"); err != nil {
			t.Fatal(err)
		}
		if got := read(t, path); got != want {
			t.Fatalf("python %d: file is\n%q\nwant\n%q", i+1, got, want)
		}
	}
	if err := WriteSection(path, "", "# B\n\ngo 3\n"); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, path), "# B\n\ngo 3\n\n"+heading+"\n\npy 2\n\n## Kafka backfill\n\nk\n"; got != want {
		t.Fatalf("go again: file is\n%q\nwant\n%q", got, want)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const heading = "## Python load tests"
