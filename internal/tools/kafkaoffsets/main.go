// Command kafkaoffsets prints the offsets a consumer group has committed,
// as JSON ({"topic": {"partition": offset}}), for tests that check a
// read's commit_offset_in_finalize from outside the job (python/):
//
//	go run ./internal/tools/kafkaoffsets --bootstrap=127.0.0.1:9092 --group=g
//
// A group that does not exist, or has committed nothing, prints {}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kafkaoffsets:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kafkaoffsets", flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "comma-separated bootstrap servers")
	group := fs.String("group", "", "the consumer group")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *group == "" || fs.NArg() != 0 {
		fs.Usage()
		return errors.New("bad arguments: --group is required")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string]map[string]int64{}
	resps, err := kadm.NewClient(cl).FetchOffsets(ctx, *group)
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
	case err != nil:
		return fmt.Errorf("group %q: %w", *group, err)
	default:
		if err := resps.Error(); err != nil {
			return fmt.Errorf("group %q: %w", *group, err)
		}
		resps.Each(func(r kadm.OffsetResponse) {
			if r.At < 0 {
				return
			}
			if out[r.Topic] == nil {
				out[r.Topic] = map[string]int64{}
			}
			out[r.Topic][strconv.Itoa(int(r.Partition))] = r.At
		})
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
