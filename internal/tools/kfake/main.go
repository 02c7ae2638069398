// Command kfake runs franz-go's kfake, an in-memory Kafka-protocol broker, as
// its own process, for tests and docs that need a Kafka cluster without Java
// or Docker (Beam's kafka integration tests, for one):
//
//	go run ./internal/tools/kfake --port=9092
//
// It prints the bootstrap servers and serves until SIGINT or SIGTERM. Topics
// are created on first use, with --partitions partitions, as a Kafka broker
// with its defaults does.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kfake", flag.ContinueOnError)
	port := fs.Int("port", 9092, "port of the first broker on 127.0.0.1 (0 picks free ports); further brokers take the next ports")
	brokers := fs.Int("brokers", 1, "number of brokers")
	partitions := fs.Int("partitions", 1, "partitions of an automatically created topic (Kafka's default num.partitions is 1)")
	dataDir := fs.String("data-dir", "", "if set, persist the log in this directory, so a restart keeps the data")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *brokers < 1 || *partitions < 1 || *port < 0 {
		fs.Usage()
		return fmt.Errorf("bad arguments")
	}

	opts := []kfake.Opt{
		kfake.NumBrokers(*brokers),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
	}
	if *port > 0 {
		ports := make([]int, *brokers)
		for i := range ports {
			ports[i] = *port + i
		}
		opts = append(opts, kfake.Ports(ports...))
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	defer c.Close()
	fmt.Printf("kfake: bootstrap servers %s\n", strings.Join(c.ListenAddrs(), ","))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
