package benchproc

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CPUTime reads a live process's user plus system time from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(pid, string(b))
}

func parseStat(pid int, stat string) (time.Duration, error) {
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis are space-separated, starting at field 3.
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+1:])
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("benchproc: short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("benchproc: /proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(u+st) * 10 * time.Millisecond, nil
}

// PeakRSS reads a live process's peak resident set in KiB.
func PeakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("benchproc: no VmHWM for pid %d", pid)
}

// WaitPort waits until something listens on addr, for at most d.
func WaitPort(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("benchproc: no listener on %s after %v", addr, d)
}

// Median returns the median of xs, sorting xs; 0 when empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Today is the date a generated section is stamped with.
func Today() string { return time.Now().UTC().Format("2006-01-02") }

// Machine describes the machine for a generated section.
func Machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("Machine: %d cores, %s, %s, host %s.", runtime.NumCPU(), memTotal(), runtime.Version(), host)
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown memory"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return fmt.Sprintf("%d GiB", kb>>20)
		}
	}
	return "unknown memory"
}

// LoadAverage is the one-, five- and fifteen-minute load average, as
// /proc/loadavg gives it, for the notes under a table.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}
