package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The processes of a soak run: a Kafka broker (internal/tools/kafka.sh),
// weir serve, and the job's client, which is its LOOPBACK SDK worker.
// Each is started here and stopped by the run that started it.

// buildBinaries builds weir and the soak job into bin.
func buildBinaries(ctx context.Context, bin string) error {
	for _, s := range [][]string{
		{"go", "build", "-o", filepath.Join(bin, "weir"), "./cmd/weir"},
		{"go", "build", "-o", filepath.Join(bin, "soakjob"), "./pipelines/soak/soakjob"},
	} {
		cmd := exec.CommandContext(ctx, s[0], s[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(s, " "), err)
		}
	}
	return nil
}

// kafkaBroker is a broker of the run's own, in dir, started fresh.
type kafkaBroker struct {
	dir  string
	addr string
}

// startKafka stops whatever broker an interrupted run left in dir,
// empties it and starts a new broker there.
func startKafka(ctx context.Context, dir string) (*kafkaBroker, error) {
	_ = exec.CommandContext(ctx, "internal/tools/kafka.sh", "stop", dir).Run()
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "internal/tools/kafka.sh", "start", dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("internal/tools/kafka.sh start %s: %w", dir, err)
	}
	return &kafkaBroker{dir: dir, addr: strings.TrimSpace(string(out))}, nil
}

func (k *kafkaBroker) stop() error {
	cmd := exec.Command("internal/tools/kafka.sh", "stop", k.dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// proc is a child process whose output goes to a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // valid once done is closed
}

// startProc starts argv with env added, its stdout and stderr into
// logPath. When ready is set, it waits (up to two minutes) for stdout
// lines until ready has found what it looks for in them.
func startProc(name, logPath string, env []string, argv []string, ready func(line string) bool) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	var lines chan string
	if ready != nil {
		// The child writes into the pipe itself; the reader copies each
		// line into the log and ends when the child closes its stdout.
		r, w, err := os.Pipe()
		if err != nil {
			f.Close()
			return nil, err
		}
		cmd.Stdout = w
		lines = make(chan string, 16)
		go func() {
			defer r.Close()
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				fmt.Fprintln(f, sc.Text())
				select {
				case lines <- sc.Text():
				default: // nobody waits any more
				}
			}
		}()
		defer w.Close() // the child has its own copy once started
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if ready == nil {
		return p, nil
	}
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case l := <-lines:
			if ready(l) {
				return p, nil
			}
		case <-p.done:
			f.Close()
			return nil, fmt.Errorf("%s exited before it was ready (%v); see %s", name, p.err, logPath)
		case <-timeout:
			p.stop(5 * time.Second)
			return nil, fmt.Errorf("%s not ready after 2 minutes; see %s", name, logPath)
		}
	}
}

// pid is the process's id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM, and SIGKILL after grace, and waits for the end.
func (p *proc) stop(grace time.Duration) {
	defer p.log.Close()
	if done, _ := p.exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// rss reads a live process's resident set from /proc, in bytes.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// openFiles counts a live process's open file descriptors.
func openFiles(pid int) (int, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(es), err
}

// threads reads a live process's thread count from /proc.
func threads(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no Threads in /proc status")
}

// dirUsage counts the regular files under root whose base name match
// accepts (all when nil) and their bytes. A file removed while it is
// walked is skipped: Pebble and the checkpoint retention delete files
// all the time.
func dirUsage(root string, match func(name string) bool) (files int, bytes int64, err error) {
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || (match != nil && !match(d.Name())) {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		files++
		bytes += info.Size()
		return nil
	})
	return files, bytes, err
}
