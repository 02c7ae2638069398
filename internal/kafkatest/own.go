package kafkatest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Own is a real broker of one test's own, in a folder of the test's, for
// tests that stop, crash and restart the broker: the shared one must stay
// up for the others. It is started through internal/tools/kafka.sh, so it
// is the same broker with the same settings; each start is a JVM start
// (about 6 s). A restart keeps the port and the data.
type Own struct {
	*Broker
	dir    string
	script string
}

// StartOwn starts a broker of the test's own, stopped when the test ends.
// It runs where the shared real broker does (WEIR_KAFKA_BROKERS set: Java
// and Maven are there) and skips, or fails under WEIR_REQUIRE_KAFKA=1,
// where it is not.
func StartOwn(t testing.TB) *Own {
	t.Helper()
	Real(t) // skips or fails without a real broker
	script, err := kafkaScript()
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	o := &Own{Broker: &Broker{Kind: KindReal}, dir: filepath.Join(t.TempDir(), "kafka"), script: script}
	t.Cleanup(func() { _ = o.run("stop") })
	o.Start(t)
	return o
}

// Start starts the broker again after Stop or Kill, on the same port,
// with the data it had.
func (o *Own) Start(t testing.TB) {
	t.Helper()
	out, err := o.output("start")
	if err != nil {
		t.Fatalf("kafkatest: starting the broker in %s: %v", o.dir, err)
	}
	o.Addrs = []string{strings.TrimSpace(out)}
}

// Stop stops the broker cleanly (SIGTERM, waited for).
func (o *Own) Stop(t testing.TB) {
	t.Helper()
	if err := o.run("stop"); err != nil {
		t.Fatalf("kafkatest: stopping the broker in %s: %v", o.dir, err)
	}
}

// Kill ends the broker with SIGKILL, as a crash.
func (o *Own) Kill(t testing.TB) {
	t.Helper()
	if err := o.run("kill"); err != nil {
		t.Fatalf("kafkatest: killing the broker in %s: %v", o.dir, err)
	}
}

func (o *Own) run(cmd string) error {
	_, err := o.output(cmd)
	return err
}

func (o *Own) output(cmd string) (string, error) {
	var out, errOut bytes.Buffer
	c := exec.Command(o.script, cmd, o.dir)
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("kafka.sh %s: %w\n%s", cmd, err, errOut.String())
	}
	return out.String(), nil
}

// kafkaScript finds internal/tools/kafka.sh above the working directory
// (a test runs in its package's folder).
func kafkaScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "internal", "tools", "kafka.sh"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: cannot find internal/tools/kafka.sh")
		}
		dir = parent
	}
}
