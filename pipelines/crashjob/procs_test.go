package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The processes of the crash test: the job (with the SDK workers weir
// starts for it, PROCESS environment) and the broker, each started, killed
// and started again by the test as a supervisor would: a process is
// started again only once it has exited.

// proc is a process the test started and waits for.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's error, once exited
}

func startProc(cmd *exec.Cmd) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the process group, so the SDK workers the job
// started go with it, and waits until the process has exited: a process
// that is still dying may still hold its files and locks.
func (p *proc) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.pid(), sig)
	<-p.exited
}

// job runs the crash job, one process per run, each run's output in a log
// file of its own.
type job struct {
	t    *testing.T
	bin  string
	args []string
	logs string
	runs int
	cur  *proc
	// exitedAlone counts runs that ended without being killed.
	exitedAlone int
}

func (j *job) start() {
	j.t.Helper()
	name := filepath.Join(j.logs, fmt.Sprintf("run-%02d.log", j.runs))
	j.runs++
	f, err := os.Create(name)
	if err != nil {
		j.t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(j.bin, j.args...)
	cmd.Stdout, cmd.Stderr = f, f
	p, err := startProc(cmd)
	if err != nil {
		j.t.Fatal(err)
	}
	j.cur = p
}

// kill ends the current run with SIGKILL, workers included.
func (j *job) kill() {
	if j.cur != nil {
		j.cur.signal(syscall.SIGKILL)
	}
}

// ensure starts the job again if its run ended by itself (a failure: a
// streaming job does not end), as a supervisor would, and says so.
func (j *job) ensure() {
	j.t.Helper()
	if j.cur != nil && j.cur.running() {
		return
	}
	if j.cur != nil {
		j.exitedAlone++
		j.t.Logf("run %d ended by itself (%v); starting it again:\n%s", j.runs-1, j.cur.err,
			tail(filepath.Join(j.logs, fmt.Sprintf("run-%02d.log", j.runs-1)), 1500))
	}
	j.start()
}

// workers returns the pids of the job's SDK worker processes: its
// children (weir starts PROCESS workers as child processes).
func (j *job) workers() []int {
	if j.cur == nil || !j.cur.running() {
		return nil
	}
	return children(j.cur.pid())
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		// A zombie (state Z) is dead already, waiting for its parent.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// kfakeBroker is kfake as its own process, persisting to a folder so that
// a restart keeps topics, offsets and transactions.
type kfakeBroker struct {
	bin, data, log string
	port           int
	address        string
	cur            *proc
}

// startKfake runs kfake as its own process, so that killing the job
// cannot take the broker with it.
func startKfake(t *testing.T, bin, dir string) *kfakeBroker {
	b := &kfakeBroker{bin: bin, data: filepath.Join(dir, "kfake-data"), log: filepath.Join(dir, "kfake.log")}
	if err := b.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.stop(false) })
	return b
}

func (b *kfakeBroker) addr() string { return b.address }

func (b *kfakeBroker) start() error {
	cmd := exec.Command(b.bin, fmt.Sprintf("--port=%d", b.port), fmt.Sprintf("--partitions=%d", partitions),
		"--data-dir="+b.data)
	f, err := os.OpenFile(b.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stderr = f
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p, err := startProc(cmd)
	if err != nil {
		return err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		p.signal(syscall.SIGKILL)
		return fmt.Errorf("kfake: %v (log in %s)", err, b.log)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "kfake: bootstrap servers ")
	if !ok {
		p.signal(syscall.SIGKILL)
		return fmt.Errorf("kfake printed %q", line)
	}
	if b.port == 0 {
		_, port, _ := strings.Cut(addr, ":")
		if b.port, err = strconv.Atoi(port); err != nil {
			return fmt.Errorf("kfake's address %q: %v", addr, err)
		}
	}
	b.address, b.cur = addr, p
	return nil
}

func (b *kfakeBroker) stop(kill bool) {
	if b.cur == nil || !b.cur.running() {
		return
	}
	if kill {
		b.cur.signal(syscall.SIGKILL)
	} else {
		b.cur.signal(syscall.SIGTERM)
	}
}

// tail returns the last n bytes of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// countLines counts the lines of the files under dir that contain s.
func countLines(dir, s string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), s) {
				n++
			}
		}
		f.Close()
	}
	return n
}
