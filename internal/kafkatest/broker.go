package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The environment variables the package reads.
const (
	// EnvBrokers names the real broker: host:port, comma separated.
	EnvBrokers = "WEIR_KAFKA_BROKERS"
	// EnvRequire, when 1, fails the real-broker subtests that would skip
	// for want of a broker.
	EnvRequire = "WEIR_REQUIRE_KAFKA"
)

// The broker kinds, which are also the subtests' names.
const (
	KindFake = "kfake"
	KindReal = "kafka"
)

// Broker is the Kafka cluster one test talks to.
type Broker struct {
	// Kind is KindFake or KindReal.
	Kind string
	// Addrs are its bootstrap servers.
	Addrs []string
	// Fake is the kfake cluster; nil on the real broker.
	Fake *kfake.Cluster
}

// Real reports whether b is the real broker.
func (b *Broker) Real() bool { return b.Kind == KindReal }

// String returns the broker's addresses, for a command line.
func (b *Broker) String() string { return strings.Join(b.Addrs, ",") }

// Each runs f as the subtest "kfake", against an in-process kfake of one
// broker, and as the subtest "kafka", against the real broker (skipped
// without one, failed without one under WEIR_REQUIRE_KAFKA=1).
func Each(t *testing.T, f func(t *testing.T, b *Broker)) {
	t.Helper()
	t.Run(KindFake, func(t *testing.T) { f(t, Fake(t)) })
	t.Run(KindReal, func(t *testing.T) { f(t, Real(t)) })
}

// Fake starts an in-process kfake of one broker, with opts, closed when
// the test ends.
func Fake(t testing.TB, opts ...kfake.Opt) *Broker {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return &Broker{Kind: KindFake, Addrs: c.ListenAddrs(), Fake: c}
}

// Real returns the real broker WEIR_KAFKA_BROKERS names; without one it
// skips the test, or fails it under WEIR_REQUIRE_KAFKA=1.
func Real(t testing.TB) *Broker {
	t.Helper()
	addrs := RealAddrs()
	if addrs == nil {
		msg := "no real Kafka broker: " + EnvBrokers + " is not set (make kafka starts one and prints its address; make test starts its own)"
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal("kafkatest: " + msg + ", and " + EnvRequire + "=1")
		}
		t.Skip(msg)
	}
	return &Broker{Kind: KindReal, Addrs: addrs}
}

// RealAddrs returns the addresses WEIR_KAFKA_BROKERS names, nil if none.
func RealAddrs() []string {
	var addrs []string
	for a := range strings.SplitSeq(os.Getenv(EnvBrokers), ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// runID tells this process's names from those of earlier runs that left
// theirs on the same long-lived broker.
var runID = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

var serial atomic.Int64

// Name returns base made unique to the test and the process (and to this
// call, so two calls never collide), fit for a topic, a consumer group or
// a transactional id: letters, digits and '-' only, the test's name cut
// so the whole stays well under Kafka's 249 characters.
func (b *Broker) Name(t testing.TB, base string) string {
	test := sanitize(t.Name())
	if len(test) > 120 {
		test = test[len(test)-120:]
	}
	return fmt.Sprintf("%s-%s-%s-%d", sanitize(base), test, runID, serial.Add(1))
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			return r
		}
		return '-'
	}, s)
}

// Client returns a franz-go client of the broker with opts, closed when
// the test ends.
func (b *Broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs...)}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: client of %s: %v", b, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client of the broker, closed when the test ends.
func (b *Broker) Admin(t testing.TB) *kadm.Client { return kadm.NewClient(b.Client(t)) }

// Topic creates a topic of partitions partitions named b.Name(t, base)
// and returns its name.
func (b *Broker) Topic(t testing.TB, base string, partitions int32) string {
	t.Helper()
	name := b.Name(t, base)
	b.CreateTopic(t, name, partitions)
	return name
}

// CreateTopic creates the topic name with partitions partitions (one
// replica) and waits until every partition's leader serves it. A real
// broker's metadata trails its CreateTopics answer, and the leader it
// names answers NOT_LEADER_OR_FOLLOWER for a moment after that; a client
// that meets it waits for its next metadata refresh (franz-go: 5 s).
func (b *Broker) CreateTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	ctx := context.Background()
	adm := b.Admin(t)
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("kafkatest: creating topic %q on %s: %v", name, b, err)
	}
	for {
		md, err := adm.Metadata(ctx, name)
		if err != nil {
			t.Fatalf("kafkatest: metadata of topic %q on %s: %v", name, b, err)
		}
		if d, ok := md.Topics[name]; ok && d.Err == nil && len(d.Partitions) == int(partitions) && led(d.Partitions) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// ListOffsets goes to each partition's leader, which refuses it until
	// it leads.
	for {
		ends, err := adm.ListEndOffsets(ctx, name)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			return
		}
		if !kerr.IsRetriable(err) {
			t.Fatalf("kafkatest: end offsets of the new topic %q on %s: %v", name, b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func led(ps kadm.PartitionDetails) bool {
	for _, p := range ps {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}
