package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/kafkaio"
)

// A read with CommitOffsetsInFinalize commits the offsets it has read to
// its consumer group (consumer_config["group.id"]) once what it read
// before them is durable downstream, as Beam's KafkaIO commits the
// offsets of a finalized checkpoint:
//
//   - When checkpoint C completes (every operator's snapshot of it is
//     stored), the source commits the position it recorded in its
//     snapshot of C: every record before it is downstream of barrier C, so
//     its effects are in C, or committed by the sinks that commit on C.
//   - When the graph ends without error (a bounded read that has read its
//     records, then every stage after it has processed them and every
//     sink flushed or committed them), it commits its final position.
//
// Nothing else commits: not a failed or cancelled job, and not an
// unbounded read without checkpoints until it ends. A commit at a
// checkpoint that fails is a warning (OnError): a later checkpoint
// commits again, and a lost commit only makes a later read by the group
// start earlier. The final commit is retried a few times, then fails the
// job, naming the group: the output is written, but the group's offsets,
// which the user asked for, are not.
//
// Commits are simple commits (generation -1, no member): weir's reader
// assigns its partitions itself, it does not join the group.

// finalCommitAttempts bounds the retries of the commit at the graph's end.
const finalCommitAttempts = 5

// committer commits a reader's positions to its consumer group with a
// client of its own, which outlives the reader for the final commit.
type committer struct {
	name    string
	group   string
	servers []string
	opts    []kgo.Opt
	client  *kgo.Client // made at the first commit
	onError func(error)
	// pending are the positions of snapshots whose checkpoint has not
	// completed yet, oldest first; final is the position at the end of a
	// Run that returned without error.
	pending []snapshotPosition
	final   *Position
}

type snapshotPosition struct {
	id  executor.BarrierID
	pos Position
}

func newCommitter(cfg *kafkaio.ReadConfig, opts ReaderOptions) *committer {
	c := &committer{name: opts.Name, group: cfg.ConsumerConfig["group.id"], servers: cfg.BootstrapServers,
		opts: opts.ClientOpts, onError: opts.OnError}
	if c.onError == nil {
		c.onError = func(error) {}
	}
	if id := cfg.ConsumerConfig["client.id"]; id != "" {
		c.opts = append([]kgo.Opt{kgo.ClientID(id)}, c.opts...)
	}
	return c
}

// snapshot records the position the source snapshotted at barrier id.
func (c *committer) snapshot(id executor.BarrierID, pos Position) {
	c.pending = append(c.pending, snapshotPosition{id: id, pos: pos})
}

// completed commits the position of the newest snapshot at or before
// checkpoint id and forgets those. Completions coalesce, so id may cover
// several snapshots.
func (c *committer) completed(ctx context.Context, id executor.BarrierID) {
	var pos *Position
	n := 0
	for ; n < len(c.pending) && c.pending[n].id <= id; n++ {
		pos = &c.pending[n].pos
	}
	if pos == nil {
		return
	}
	p := *pos
	c.pending = append(c.pending[:0], c.pending[n:]...)
	if err := c.commit(ctx, p); err != nil {
		c.onError(fmt.Errorf("kafka source %s: committing the offsets of checkpoint %d to group %q: %w (a later checkpoint commits again)", c.name, id, c.group, err))
	}
}

// end commits the final position when the graph ended without error, and
// closes the client.
func (c *committer) end(ctx context.Context, graphErr error) error {
	defer c.close()
	if graphErr != nil || c.final == nil {
		return nil
	}
	var err error
	for attempt := range finalCommitAttempts {
		if err = c.commit(ctx, *c.final); err == nil {
			return nil
		}
		if attempt < finalCommitAttempts-1 {
			if serr := sleep(ctx, backoff(attempt)); serr != nil {
				break
			}
		}
	}
	return fmt.Errorf("kafka source %s: committing the final offsets to group %q: %w", c.name, c.group, err)
}

func (c *committer) commit(ctx context.Context, pos Position) error {
	if c.client == nil {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.servers...), kgo.RetryTimeout(5 * time.Second)}, c.opts...)...)
		if err != nil {
			return err
		}
		c.client = cl
	}
	offsets := kadm.Offsets{}
	for topic, parts := range pos.Next {
		for p, next := range parts {
			offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: next, LeaderEpoch: -1})
		}
	}
	resp, err := kadm.NewClient(c.client).CommitOffsets(ctx, c.group, offsets)
	if err != nil {
		return err
	}
	return resp.Error()
}

func (c *committer) close() {
	if c.client != nil {
		c.client.Close()
		c.client = nil
	}
}
