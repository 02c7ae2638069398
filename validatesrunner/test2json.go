package validatesrunner

import (
	"bufio"
	"encoding/json"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Event is one test2json event, as printed by `go test -json` and
// `go tool test2json`.
type Event struct {
	Time    time.Time `json:",omitempty"`
	Action  string
	Package string  `json:",omitempty"`
	Test    string  `json:",omitempty"`
	Elapsed float64 `json:",omitempty"`
	Output  string  `json:",omitempty"`
}

// Test statuses.
const (
	Pass = "pass"
	Fail = "fail"
	Skip = "skip"
)

// maxTail is how many output lines of a test are kept in the results file.
const maxTail = 12

// testState accumulates the events of one top-level test and its subtests.
type testState struct {
	name    string
	status  string // "" while running
	elapsed float64
	ran     bool      // the run event was seen
	started time.Time // time of the run event
	conns   int       // connections to the job server while the test ran
	lines   []string  // framing-free output lines (bounded)
	lastLog []string  // the last t.Log/t.Error/t.Skip message: first line + last continuation lines
	failed  []string  // names of failed subtests
	drains  []DrainRecord
	inLog   bool // the previous line was part of a t.Log message
	// lineElapsed is the duration from the "--- PASS: Name (1.23s)" line,
	// used when the event carries no Elapsed.
	lineElapsed float64
}

// Collector turns a stream of test2json events of one package into per-test
// results. Only top-level tests (and examples) get a result; subtest output
// and failures are folded into their parent.
type Collector struct {
	tests   map[string]*testState
	order   []string
	pkgOut  []string
	pkgDone string            // package-level action: pass, fail or skip ("" while running)
	pending map[string]string // unterminated output, per test
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{tests: map[string]*testState{}, pending: map[string]string{}}
}

// ParseEvents reads test2json events from r until EOF and feeds them into c.
// Lines that are not JSON (for example a build failure printed before the
// binary ran) are treated as package output.
func (c *Collector) ParseEvents(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		c.AddLine(sc.Bytes())
	}
	return sc.Err()
}

// AddLine feeds one line of `go test -json` output.
func (c *Collector) AddLine(line []byte) {
	var ev Event
	if len(line) == 0 {
		return
	}
	if line[0] != '{' || !jsonEvent(line, &ev) {
		c.pkgOut = appendBounded(c.pkgOut, string(line), 4*maxTail)
		return
	}
	c.Add(ev)
}

func jsonEvent(line []byte, ev *Event) bool {
	return json.Unmarshal(line, ev) == nil && ev.Action != ""
}

func topLevel(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return name
}

func (c *Collector) state(name string) *testState {
	st, ok := c.tests[name]
	if !ok {
		st = &testState{name: name}
		c.tests[name] = st
		c.order = append(c.order, name)
	}
	return st
}

// Add feeds one event.
func (c *Collector) Add(ev Event) {
	if ev.Test == "" {
		switch ev.Action {
		case "output":
			c.addOutput("", ev.Output)
		case Pass, Fail, Skip:
			c.pkgDone = ev.Action
		}
		return
	}
	top := topLevel(ev.Test)
	st := c.state(top)
	switch ev.Action {
	case "run":
		if ev.Test == top && !st.ran {
			st.ran, st.started = true, ev.Time
		}
	case "output":
		c.addOutput(ev.Test, ev.Output)
	case Pass, Fail, Skip:
		if ev.Test == top {
			st.status = ev.Action
			st.elapsed = ev.Elapsed
		} else if ev.Action == Fail {
			st.failed = append(st.failed, ev.Test)
		}
	}
}

// addOutput splits output into lines; test2json may split long lines.
func (c *Collector) addOutput(test, out string) {
	buf := c.pending[test] + out
	for {
		i := strings.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		c.addLine(test, buf[:i])
		buf = buf[i+1:]
	}
	if len(buf) > 64*1024 {
		c.addLine(test, buf)
		buf = ""
	}
	c.pending[test] = buf
}

var (
	// "    foo_test.go:12: message" as written by t.Log, t.Error, t.Skip...
	testLogLine = regexp.MustCompile(`^\s*[\w.\-]+\.go:\d+: `)
	// slog and log lines below warning level are noise for failure reasons.
	quietLogLine = regexp.MustCompile(`level=(INFO|DEBUG)\b|^\S+ \S+ (INFO|DEBUG) `)
	// "--- PASS: TestName (1.23s)"
	framingResult = regexp.MustCompile(`^\s*--- (?:PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)
)

func isFraming(l string) bool {
	t := strings.TrimSpace(l)
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

func (c *Collector) addLine(test, l string) {
	l = strings.TrimRight(l, "\r")
	if test == "" {
		if strings.TrimSpace(l) != "" {
			c.pkgOut = appendBounded(c.pkgOut, l, 4*maxTail)
		}
		return
	}
	st := c.state(topLevel(test))
	if m := framingResult.FindStringSubmatch(l); m != nil && m[1] == st.name {
		if f, err := strconv.ParseFloat(m[2], 64); err == nil {
			st.lineElapsed = f
		}
	}
	if strings.TrimSpace(l) == "" || isFraming(l) {
		st.inLog = false
		return
	}
	st.lines = appendBounded(st.lines, l, 4*maxTail)
	switch {
	case testLogLine.MatchString(l):
		st.lastLog = []string{l}
		st.inLog = true
	case st.inLog && strings.HasPrefix(l, "        ") && len(st.lastLog) > 0:
		// Continuation of a multi-line t.Log message.
		st.lastLog = append(st.lastLog, l)
		if len(st.lastLog) > 2*maxTail {
			st.lastLog = append(st.lastLog[:1:1], st.lastLog[len(st.lastLog)-maxTail:]...)
		}
	default:
		st.inLog = false
	}
}

func appendBounded(s []string, l string, n int) []string {
	s = append(s, l)
	if len(s) > n {
		s = append(s[:0:0], s[len(s)-n:]...)
	}
	return s
}

// Current returns the top-level test started last that has no result yet
// ("" if none). Tests of one process run one at a time unless they call
// t.Parallel, which none of the suite's packages do.
func (c *Collector) Current() string {
	r := c.Running()
	if len(r) == 0 {
		return ""
	}
	return r[len(r)-1]
}

// AddConn records a connection to the job server made while test ran.
func (c *Collector) AddConn(test string) {
	if test != "" {
		c.state(test).conns++
	}
}

// SetDrains records what the harness did to drain test's jobs.
func (c *Collector) SetDrains(test string, recs []DrainRecord) {
	if len(recs) > 0 {
		st := c.state(test)
		st.drains = append(st.drains, recs...)
	}
}

// Finished reports whether the package-level terminal event was seen.
func (c *Collector) Finished() bool { return c.pkgDone != "" }

// PackageOutput returns the last lines printed outside any test.
func (c *Collector) PackageOutput() []string { return append([]string(nil), c.pkgOut...) }

// Running returns the top-level tests that started but have no result yet,
// in start order.
func (c *Collector) Running() []string {
	var r []string
	for _, n := range c.order {
		if st := c.tests[n]; st.status == "" && st.ran {
			r = append(r, n)
		}
	}
	return r
}

// RunningSince returns when test started (zero if unknown).
func (c *Collector) RunningSince(test string) time.Time {
	if st, ok := c.tests[test]; ok {
		return st.started
	}
	return time.Time{}
}

// Done returns the names of top-level tests that have a result.
func (c *Collector) Done() map[string]bool {
	d := map[string]bool{}
	for n, st := range c.tests {
		if st.status != "" {
			d[n] = true
		}
	}
	return d
}

// MarkFailed gives every started-but-unfinished top-level test a failure
// with the given reason (used when the test process is killed or dies).
func (c *Collector) MarkFailed(test, reason string, elapsed float64) {
	st := c.state(test)
	if st.status != "" {
		return
	}
	for k, v := range c.pending {
		if v != "" && topLevel(k) == test {
			c.addLine(k, v)
			c.pending[k] = ""
		}
	}
	st.status = Fail
	st.elapsed = elapsed
	st.lines = appendBounded(st.lines, reason, 4*maxTail)
	st.lastLog = []string{reason}
}

// Results returns the results of all top-level tests that finished, in the
// order they started.
func (c *Collector) Results() []TestResult {
	var rs []TestResult
	for _, n := range c.order {
		st := c.tests[n]
		if st.status == "" {
			continue
		}
		r := TestResult{
			Name:    n,
			Status:  st.status,
			Seconds: round2(st.elapsed),
			Conns:   st.conns,
			Drains:  st.drains,
		}
		if r.Seconds == 0 {
			r.Seconds = round2(st.lineElapsed)
		}
		if st.status != Pass {
			r.Reason = summarize(st)
			r.Tail = tail(st.lines, maxTail)
			if len(st.failed) > 0 {
				r.FailedSubtests = append([]string(nil), st.failed...)
				sort.Strings(r.FailedSubtests)
			}
		}
		rs = append(rs, r)
	}
	return rs
}

func round2(f float64) float64 {
	return float64(int64(f*100+0.5)) / 100
}

func tail(s []string, n int) []string {
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return append([]string(nil), s...)
}

// summarize picks a one-line reason for a failure or skip: the last message
// the test logged through t.Error/t.Fatal/t.Skip, else the last non-noise
// output line. Of a multi-line message it keeps the first line and the last
// two, where error chains put the root cause.
func summarize(st *testState) string {
	const n = 300
	var s string
	if len(st.lastLog) > 0 {
		var parts []string
		for _, p := range st.lastLog {
			if p = OneLine(p, n); p != "" {
				parts = append(parts, p)
			}
		}
		head, rest := parts[0], parts[1:]
		sep := " | "
		if len(rest) > 2 {
			rest, sep = rest[len(rest)-2:], " | … | "
		}
		if len(rest) == 0 {
			return OneLine(head, n)
		}
		tail := strings.Join(rest, " | ")
		if room := n - len([]rune(tail)) - len([]rune(sep)); room < len([]rune(head)) {
			head = OneLine(head, max(room, 80))
		}
		return OneLine(head+sep+tail, n)
	} else {
		for i := len(st.lines) - 1; i >= 0; i-- {
			if !quietLogLine.MatchString(st.lines[i]) {
				s = strings.TrimSpace(st.lines[i])
				break
			}
		}
		if s == "" && len(st.lines) > 0 {
			s = strings.TrimSpace(st.lines[len(st.lines)-1])
		}
	}
	return OneLine(s, n)
}

// OneLine collapses whitespace and newlines and truncates s to n runes.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
