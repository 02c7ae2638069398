package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestLockRootWithinProcess: a second lock of a held root fails naming
// the holder; once released, the root locks again.
func TestLockRootWithinProcess(t *testing.T) {
	for name, fs := range map[string]vfs.FS{"mem": vfs.NewMem(), "disk": vfs.Default} {
		t.Run(name, func(t *testing.T) {
			dir := "/job/checkpoints"
			if fs == vfs.Default {
				dir = filepath.Join(t.TempDir(), "checkpoints")
			}
			first, err := LockRoot(fs, dir, Holder{PID: 41, Job: "wordcount", JobID: "wordcount-1"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = LockRoot(fs, dir, Holder{PID: 42, Job: "wordcount", JobID: "wordcount-2"})
			var le *LockedError
			if !errors.As(err, &le) || le.Holder == nil || le.Holder.PID != 41 || le.Holder.JobID != "wordcount-1" {
				t.Fatalf("second lock: %v, want a LockedError naming wordcount-1, pid 41", err)
			}
			for _, s := range []string{dir, "job wordcount-1 (pid 41", "must not share"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if err := first.Release(); err != nil {
				t.Fatal(err)
			}
			if err := first.Release(); err != nil {
				t.Fatalf("second release: %v", err)
			}
			again, err := LockRoot(fs, dir, Holder{PID: 43})
			if err != nil {
				t.Fatalf("lock after release: %v", err)
			}
			defer again.Release()
			if h, err := readHolder(fs, dir); err != nil || h.PID != 43 {
				t.Errorf("holder after the second lock: %+v, %v; want pid 43", h, err)
			}
		})
	}
}

// TestLockRootAcrossProcesses runs this test binary again as a process
// that locks a root and waits: this process cannot lock it and is told
// the other's pid and job; once the other is killed (SIGKILL: it releases
// nothing itself), the kernel has released its lock and the root locks.
func TestLockRootAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("WEIR_TEST_LOCK_ROOT"); dir != "" {
		holdRoot(dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "checkpoints")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockRootAcrossProcesses$")
	cmd.Env = append(os.Environ(), "WEIR_TEST_LOCK_ROOT="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe() // the holder exits when this closes
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the holder said %q, %v", line, err)
	}

	_, err = LockRoot(vfs.Default, dir, Holder{PID: os.Getpid(), Job: "second"})
	var le *LockedError
	if !errors.As(err, &le) || le.Holder == nil || le.Holder.PID != cmd.Process.Pid || le.Holder.Job != "holder" {
		t.Fatalf("lock held by pid %d: %v, want a LockedError naming it", cmd.Process.Pid, err)
	}
	t.Logf("the second process was told: %v", err)

	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	l, err := LockRoot(vfs.Default, dir, Holder{PID: os.Getpid(), Job: "second"})
	if err != nil {
		t.Fatalf("the holder was killed, yet its lock blocks: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// holdRoot is the other process of TestLockRootAcrossProcesses.
func holdRoot(dir string) {
	l, err := LockRoot(vfs.Default, dir, Holder{PID: os.Getpid(), Job: "holder", Since: time.Now()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer l.Release()
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes it or kills this
}
