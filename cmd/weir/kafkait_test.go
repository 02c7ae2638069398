package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weir-runner/weir/runner"
)

// beamKafkaTests is Beam's own cross-language Kafka test package, written
// against Java's KafkaIO and its expansion service.
const beamKafkaTests = "github.com/apache/beam/sdks/v2/go/test/integration/io/xlang/kafka"

// TestBeamKafkaIOBasicReadWrite runs Beam's TestKafkaIO_BasicReadWrite
// unchanged against weir: its kafkaio pipelines expand through weir's
// expansion service into weir's native Kafka transforms, and read and write
// a kfake broker. The test binary is built with `go test -c` so that it
// keeps its symbol table, which the Go SDK needs to find the test's
// unregistered functions.
func TestBeamKafkaIOBasicReadWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Beam's Kafka test package")
	}
	bin := filepath.Join(t.TempDir(), "kafka.test")
	build := exec.CommandContext(t.Context(), "go", "test", "-c", "-o", bin, beamKafkaTests)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", beamKafkaTests, err, out)
	}

	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()

	log := slog.New(slog.DiscardHandler)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	jobs := runner.NewServer(runner.NewLocalExecutor(), runner.ServerOptions{Logger: log})
	go func() { _ = jobs.Serve(lis) }()
	defer jobs.Stop(context.Background())
	var out bytes.Buffer
	exp, err := serveExpansion("127.0.0.1:0", nil, log, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Stop(context.Background())
	_, rest, _ := strings.Cut(out.String(), "expansion service on ")
	expAddr, _, _ := strings.Cut(rest, ";")

	run := exec.CommandContext(t.Context(), bin, "-test.run", "^TestKafkaIO_BasicReadWrite$", "-test.v", "-test.timeout", "5m",
		"--runner=universal", "--endpoint="+lis.Addr().String(), "--environment_type=LOOPBACK",
		"--bootstrap_servers="+strings.Join(broker.ListenAddrs(), ","), "--expansion_addr=io:"+expAddr)
	run.Env = append(os.Environ(), "GOFLAGS=")
	got, err := run.CombinedOutput()
	if err != nil || !bytes.Contains(got, []byte("--- PASS: TestKafkaIO_BasicReadWrite")) {
		t.Fatalf("Beam's TestKafkaIO_BasicReadWrite on weir: %v\n%s", err, tail(got, 4000))
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
