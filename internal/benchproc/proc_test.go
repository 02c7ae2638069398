package benchproc

import (
	"os"
	"testing"
	"time"
)

// TestParseStat reads utime and stime past a command name with spaces and
// parentheses in it.
func TestParseStat(t *testing.T) {
	stat := "4242 (weir (serve) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 123 45 0 0 20 0 12 0"
	got, err := parseStat(4242, stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1680 * time.Millisecond; got != want {
		t.Fatalf("CPU time %v, want %v", got, want)
	}
	if _, err := parseStat(1, "1 (x) S 1 2"); err == nil {
		t.Fatal("short stat: no error")
	}
}

// sink keeps the busy loop's result, so that the compiler cannot drop the
// loop as dead code (it did: the test ran in 16 ms and read 0 s of CPU,
// under the kernel's 10 ms accounting tick).
var sink int

// TestOwnProcess reads this process's figures, which must be positive
// after it has burnt some CPU: about 0.2 s, twenty accounting ticks.
func TestOwnProcess(t *testing.T) {
	x := 0
	for i := range 200_000_000 {
		x += i % 7
	}
	sink = x
	cpu, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if cpu <= 0 {
		t.Fatalf("CPU time %v after a busy loop", cpu)
	}
	rss, err := PeakRSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("peak RSS %d KiB, %v", rss, err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}
