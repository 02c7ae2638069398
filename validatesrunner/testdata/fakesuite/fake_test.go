// Package fakesuite is a stand-in for a Beam test package, used by
// harness_test.go to check how the harness handles passes, failures, job
// server connections, hangs and crashes.
package fakesuite

import (
	"flag"
	"net"
	"os"
	"testing"
)

var (
	endpoint = flag.String("endpoint", "", "job server")
	_        = flag.String("runner", "", "runner")
	_        = flag.String("environment_type", "", "environment")
)

// dial connects like Beam's gRPC client does: it waits for the server to
// speak first (gRPC waits for the server's HTTP/2 settings).
func dial(t *testing.T) {
	c, err := net.Dial("tcp", *endpoint)
	if err != nil {
		t.Fatalf("dial %s: %v", *endpoint, err)
	}
	defer c.Close()
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatalf("read from %s: %v", *endpoint, err)
	}
}

func TestPass(t *testing.T) {}

func TestDial(t *testing.T) {
	dial(t)
	dial(t)
}

func TestFail(t *testing.T) {
	t.Run("sub", func(t *testing.T) { t.Fatalf("boom: %s", "job failed") })
}

func TestSkip(t *testing.T) { t.Skip("not here") }

func TestHang(t *testing.T) {
	dial(t)
	select {}
}

func TestAfterHang(t *testing.T) { dial(t) }

func TestCrash(t *testing.T) { os.Exit(3) }

func TestAfterCrash(t *testing.T) {}
