package validatesrunner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FreePort asks the kernel for a free TCP port on localhost.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Server is a job server process started from a command template.
type Server struct {
	Template string // command line; {port} is replaced by Port
	Port     int
	LogPath  string
	Starts   int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// Endpoint is the address tests use.
func (s *Server) Endpoint() string { return "localhost:" + strconv.Itoa(s.Port) }

// Argv is the command line for the current port. The template is split on
// white space; there is no shell quoting.
func (s *Server) Argv() []string {
	return strings.Fields(strings.ReplaceAll(s.Template, "{port}", strconv.Itoa(s.Port)))
}

// Start starts the server and waits until its port accepts connections.
func (s *Server) Start(ctx context.Context, wait time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startLocked(ctx, wait)
}

func (s *Server) startLocked(ctx context.Context, wait time.Duration) error {
	argv := s.Argv()
	if len(argv) == 0 {
		return errors.New("empty job server command")
	}
	if s.log == nil {
		if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o755); err != nil {
			return err
		}
		f, err := os.Create(s.LogPath)
		if err != nil {
			return err
		}
		s.log = f
	}
	s.Starts++
	fmt.Fprintf(s.log, "\n==== vr: start #%d: %s\n", s.Starts, strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting job server %q: %v", strings.Join(argv, " "), err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(s.log, "\n==== vr: job server exited: %v\n", err)
		close(done)
	}()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(wait)
	for {
		c, err := net.DialTimeout("tcp", s.Endpoint(), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("job server %q exited before listening on %s; log tail:\n%s", strings.Join(argv, " "), s.Endpoint(), s.logTail(15))
		case <-ctx.Done():
			s.stopLocked()
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stopLocked()
			return fmt.Errorf("job server %q did not listen on %s within %v; log tail:\n%s", strings.Join(argv, " "), s.Endpoint(), wait, s.logTail(15))
		}
	}
}

// logTail returns the last n lines of the server log.
func (s *Server) logTail(n int) string {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Alive reports whether the server process is still running.
func (s *Server) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aliveLocked()
}

func (s *Server) aliveLocked() bool {
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Ensure restarts the server if it died. It reports whether it restarted.
func (s *Server) Ensure(ctx context.Context, wait time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aliveLocked() {
		return false, nil
	}
	return true, s.startLocked(ctx, wait)
}

// Stop terminates the server (SIGTERM, then SIGKILL after 5s).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
}

func (s *Server) stopLocked() {
	if !s.aliveLocked() {
		return
	}
	pid := s.cmd.Process.Pid
	syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-pid, syscall.SIGKILL)
		<-s.done
	}
}

// Options configure RunPackage.
type Options struct {
	Go          string        // go command
	BinDir      string        // where test binaries are built
	TmpDir      string        // TMPDIR for test processes
	Endpoint    string        // the job server, host:port
	Args        []string      // flags after -args: --runner=universal ... (--endpoint is added)
	TestTimeout time.Duration // per top-level test watchdog
	PkgTimeout  time.Duration // -test.timeout of each test process
	KeepBins    bool
	Server      *Server // restarted between test processes if it died; may be nil
	ServerWait  time.Duration
	Log         io.Writer // progress lines
	// DrainAfter is how long the job of a test in DrainTests runs before
	// the harness drains it (0: DefaultDrainAfter).
	DrainAfter time.Duration
	// DrainTests, if set, replaces the package's DrainTests (for tests).
	DrainTests []DrainTest
}

func (o *Options) logf(format string, a ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", a...)
	}
}

var listedName = regexp.MustCompile(`^(Test|Example)\w*$`)

// RunPackage builds the test binary of sel, lists its tests and runs them
// the way `go test -json <pkg> -args <Args>` does (the binary under
// `go tool test2json`, in the package's source directory). A top-level test
// that runs longer than TestTimeout, or a test process that crashes, fails
// the test that was running; the remaining tests then run in a fresh
// process, so one hang or crash costs one test, not the package.
func RunPackage(ctx context.Context, o *Options, sel Selection) (pr PackageResult) {
	pr = PackageResult{Package: sel.Package, Filter: sel.Run}
	start := time.Now()
	defer func() { pr.Seconds = round2(time.Since(start).Seconds()) }()
	imp := sel.ImportPath()

	dir, err := goOutput(ctx, o.Go, "list", "-f", "{{.Dir}}", imp)
	if err != nil {
		pr.Error = "go list: " + err.Error()
		return pr
	}
	dir = strings.TrimSpace(dir)
	bin := filepath.Join(o.BinDir, strings.ReplaceAll(sel.Package, "/", "_")+".test")
	if err := os.MkdirAll(o.BinDir, 0o755); err != nil {
		pr.Error = err.Error()
		return pr
	}
	o.logf("vr: %s: building test binary", sel.Package)
	if _, err := goOutput(ctx, o.Go, "test", "-c", "-o", bin, imp); err != nil {
		pr.Error = "build failed: " + err.Error()
		return pr
	}
	if !o.KeepBins {
		defer os.Remove(bin)
	}
	start = time.Now() // time the tests, not the build

	run := sel.Run
	if run == "" {
		run = ".*"
	}
	lc := exec.CommandContext(ctx, bin, "-test.list", run)
	lc.Dir = dir
	out, err := lc.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); listedName.MatchString(l) {
			pr.Listed = append(pr.Listed, l)
		}
	}
	if err != nil && len(pr.Listed) == 0 {
		pr.Error = fmt.Sprintf("listing tests: %v: %s", err, OneLine(string(out), 300))
		return pr
	}

	if err := os.MkdirAll(o.TmpDir, 0o755); err != nil {
		pr.Error = err.Error()
		return pr
	}
	col := NewCollector()
	remaining := append([]string(nil), pr.Listed...)
	var pkgErrs []string
	for attempt := 0; len(remaining) > 0; attempt++ {
		if ctx.Err() != nil {
			pkgErrs = append(pkgErrs, "interrupted")
			break
		}
		if attempt > 0 {
			pr.Restart++
		}
		if o.Server != nil {
			restarted, err := o.Server.Ensure(ctx, o.ServerWait)
			if restarted {
				o.logf("vr: %s: job server had exited; restarted it", sel.Package)
				pkgErrs = append(pkgErrs, "job server exited and was restarted")
			}
			if err != nil {
				msg := "job server could not be restarted: " + OneLine(err.Error(), 300)
				pkgErrs = append(pkgErrs, msg)
				for _, n := range remaining {
					col.MarkFailed(n, "vr: not run: "+msg, 0)
				}
				break
			}
		}
		before := len(col.Done())
		killed, why, exitErr := runOnce(ctx, o, sel.Package, imp, bin, dir, remaining, col)
		now := time.Now()
		for _, n := range col.Running() {
			el := now.Sub(col.RunningSince(n)).Seconds()
			switch {
			case killed == n && why != "":
				col.MarkFailed(n, "vr: "+why, el)
				pkgErrs = append(pkgErrs, fmt.Sprintf("%s: %s", n, why))
			case killed == n:
				col.MarkFailed(n, fmt.Sprintf("vr: killed by the watchdog after %v (per-test timeout)", o.TestTimeout), el)
				pkgErrs = append(pkgErrs, fmt.Sprintf("%s hung and was killed after %v", n, o.TestTimeout))
			default:
				col.MarkFailed(n, fmt.Sprintf("vr: test process ended (%v) before the test finished", exitErr), el)
				pkgErrs = append(pkgErrs, fmt.Sprintf("test process ended (%v) during %s", exitErr, n))
			}
		}
		done := col.Done()
		var next []string
		for _, n := range remaining {
			if !done[n] {
				next = append(next, n)
			}
		}
		if len(next) > 0 && len(done) == before {
			// No progress: the process cannot run tests at all (bad flags,
			// TestMain failure...). Fail what is left with its output.
			msg := fmt.Sprintf("vr: test process ran no test (%v): %s", exitErr, OneLine(strings.Join(col.PackageOutput(), " | "), 400))
			pkgErrs = append(pkgErrs, msg)
			for _, n := range next {
				col.MarkFailed(n, msg, 0)
			}
			break
		}
		if len(next) > 0 && killed == "" {
			// The process died between tests or after a test that reported
			// its own failure (a panic): note it; the rest run again.
			pkgErrs = append(pkgErrs, fmt.Sprintf("test process exited early (%v); %d tests were rerun in a new process", exitErr, len(next)))
		}
		remaining = next
	}
	pr.Tests = col.Results()
	if len(pkgErrs) > 0 {
		pr.Error = strings.Join(uniq(pkgErrs), "; ")
	}
	return pr
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// runOnce runs the given tests in one test process, feeding events into
// col. It returns the test the process was killed for, if any, and why
// when it was not the watchdog: the job server refused to drain the job
// of a test in DrainTests, which then cannot end.
//
// The test binary's combined stdout and stderr (as `go test` combines them)
// is read here directly and passed on to `go tool test2json` for parsing.
// Reading it directly lets job server connections be attributed exactly:
// when the counting proxy accepts a connection, everything the binary wrote
// before it dialled (including the "=== RUN" line of the test that dials)
// is already in the pipe, and is consumed before the connection is counted.
func runOnce(ctx context.Context, o *Options, pkg, imp, bin, dir string, tests []string, col *Collector) (killed, why string, exitErr error) {
	quoted := make([]string, len(tests))
	for i, t := range tests {
		quoted[i] = regexp.QuoteMeta(t)
	}
	var mu sync.Mutex // guards col

	// The converter: go tool test2json reading the raw output on stdin.
	conv := exec.Command(o.Go, "tool", "test2json", "-p", imp)
	convIn, err := conv.StdinPipe()
	if err != nil {
		return "", "", err
	}
	convOut, err := conv.StdoutPipe()
	if err != nil {
		return "", "", err
	}
	conv.Stderr = os.Stderr
	if err := conv.Start(); err != nil {
		return "", "", err
	}
	convDone := make(chan struct{})
	go func() {
		defer close(convDone)
		sc := bufio.NewScanner(convOut)
		sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
		for sc.Scan() {
			line := sc.Bytes()
			mu.Lock()
			var ev Event
			if len(line) > 0 && line[0] == '{' && jsonEvent(line, &ev) {
				ev.Time = time.Now() // the watchdog uses our clock
				if ev.Action == "run" && !strings.Contains(ev.Test, "/") {
					o.logf("vr: %s: %s", pkg, ev.Test)
				}
				col.Add(ev)
			} else {
				col.AddLine(line)
			}
			mu.Unlock()
		}
		io.Copy(io.Discard, convOut)
	}()

	// The raw reader: owns reads of the test binary's output pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		convIn.Close()
		conv.Wait()
		return "", "", err
	}
	drains := newDrainSet(o, pkg)
	raw := &rawReader{f: pr, out: convIn, conns: map[string]int{}, onConn: drains.onConn}

	proxy, err := startProxy(o.Endpoint, raw.countConn)
	if err != nil {
		pr.Close()
		pw.Close()
		convIn.Close()
		conv.Wait()
		return "", "", err
	}
	defer proxy.Close()

	args := []string{"-test.v=test2json", "-test.paniconexit0",
		"-test.run", "^(" + strings.Join(quoted, "|") + ")$",
		"-test.timeout", o.PkgTimeout.String(),
	}
	args = append(args, o.Args...)
	args = append(args, "--endpoint="+proxy.Addr().String())
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+o.TmpDir)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		convIn.Close()
		conv.Wait()
		return "", "", err
	}
	pw.Close()
	pgid := cmd.Process.Pid
	rawDone := make(chan struct{})
	go func() {
		defer close(rawDone)
		raw.loop()
		convIn.Close()
	}()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-rawDone:
			break loop
		case <-ctx.Done():
			syscall.Kill(-pgid, syscall.SIGKILL)
			break loop
		case <-tick.C:
			mu.Lock()
			for _, n := range col.Running() {
				if time.Since(col.RunningSince(n)) > o.TestTimeout {
					killed = n
				}
			}
			done := col.Done()
			mu.Unlock()
			for _, n := range drains.tests() {
				if done[n] {
					recs := drains.stop(n)
					mu.Lock()
					col.SetDrains(n, recs)
					mu.Unlock()
				} else if ans := drains.refusal(n); killed == "" && ans != "" {
					// No "; ": it separates a package's notes (mergeNotes).
					ans = strings.ReplaceAll(ans, "; ", ", ")
					killed, why = n, fmt.Sprintf("the job server refused JobService.Drain (%s), so the job cannot end and the test process was stopped", ans)
				}
			}
			if killed != "" {
				if why != "" {
					o.logf("vr: %s: %s: %s", pkg, killed, why)
				} else {
					o.logf("vr: %s: %s exceeded %v, killing the test process", pkg, killed, o.TestTimeout)
				}
				syscall.Kill(-pgid, syscall.SIGKILL)
				break loop
			}
		}
	}
	exitErr = cmd.Wait()
	// Children of the test binary may hold the pipe open; do not wait on
	// them forever.
	select {
	case <-rawDone:
	case <-time.After(10 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		pr.SetReadDeadline(time.Now())
		<-rawDone
	}
	pr.Close()
	<-convDone
	conv.Wait()
	proxy.Close() // no test connects any more; onConn starts no drainer
	for _, n := range drains.tests() {
		recs := drains.stop(n)
		mu.Lock()
		col.SetDrains(n, recs)
		mu.Unlock()
	}
	mu.Lock()
	for t, n := range raw.connCounts() {
		for i := 0; i < n; i++ {
			col.AddConn(t)
		}
	}
	mu.Unlock()
	return killed, why, exitErr
}

// rawRunLine matches the framing line `go test` prints when a test starts;
// with -test.v=test2json it is prefixed by ^V.
var rawRunLine = regexp.MustCompile(`^\x16?=== RUN\s+(\S+)`)

// rawReader copies the test binary's output to the converter while tracking
// which top-level test is running, so that proxy connections can be
// attributed to it.
type rawReader struct {
	mu      sync.Mutex // held while reading f
	f       *os.File
	out     io.Writer
	partial []byte
	current string
	conns   map[string]int
	eof     bool
	buf     [32 * 1024]byte
	// noDeadline: the pipe does not support deadlines, so reads block and
	// countConn must not read.
	noDeadline bool
	// onConn, if set, is called with the running test for each connection
	// before it goes through.
	onConn func(test string)
}

// readSome reads what f has within wait. It returns the bytes read and
// false at EOF or on an error.
func (r *rawReader) readSome(wait time.Duration) (int, bool) {
	if r.eof {
		return 0, false
	}
	if r.f.SetReadDeadline(time.Now().Add(wait)) != nil {
		r.noDeadline = true
	}
	n, err := r.f.Read(r.buf[:])
	if n > 0 {
		r.consume(r.buf[:n])
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		r.eof = true
		return n, false
	}
	return n, true
}

func (r *rawReader) consume(b []byte) {
	r.out.Write(b)
	r.partial = append(r.partial, b...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		if m := rawRunLine.FindSubmatch(r.partial[:i]); m != nil && !bytes.Contains(m[1], []byte("/")) {
			r.current = string(m[1])
		}
		r.partial = r.partial[i+1:]
	}
	if len(r.partial) > 1<<20 {
		r.partial = nil
	}
}

func (r *rawReader) loop() {
	for {
		r.mu.Lock()
		_, ok := r.readSome(50 * time.Millisecond)
		r.mu.Unlock()
		if !ok {
			return
		}
	}
}

// countConn drains what the test binary has written so far, then counts a
// job server connection for the test that is running.
func (r *rawReader) countConn() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < 1000 && !r.noDeadline; i++ {
		// A read with a 1ms deadline returns what the pipe holds, or
		// nothing once it is empty.
		if n, ok := r.readSome(time.Millisecond); n == 0 || !ok {
			break
		}
	}
	if r.current != "" {
		r.conns[r.current]++
	}
	if r.onConn != nil {
		r.onConn(r.current)
	}
}

func (r *rawReader) connCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns
}

func goOutput(ctx context.Context, goCmd string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", goCmd, strings.Join(args, " "), err, OneLine(errb.String(), 1000))
	}
	return out.String(), nil
}

// startProxy listens on a free localhost port and forwards every connection
// to target, calling onConn for each one. Each test process gets its own
// proxy as its --endpoint, so connections can be attributed to the test
// that is running in it.
func startProxy(target string, onConn func()) (net.Listener, error) {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			onConn()
			go func() {
				defer c.Close()
				u, err := net.DialTimeout("tcp", target, 10*time.Second)
				if err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{}, 2)
				go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				go func() { io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
	return l, nil
}
