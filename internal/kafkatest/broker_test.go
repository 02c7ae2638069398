package kafkatest

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestName: names are legal Kafka topic names, unique per call, and say
// which test and base they belong to, however long the test's name.
func TestName(t *testing.T) {
	b := &Broker{Kind: KindFake}
	legal := regexp.MustCompile(`^[a-zA-Z0-9-]{1,249}$`)
	seen := map[string]bool{}
	for _, name := range []string{"short", "with spaces/and, punctuation_é", strings.Repeat("long", 100)} {
		t.Run(name, func(t *testing.T) {
			for range 2 {
				n := b.Name(t, "out.topic")
				if !legal.MatchString(n) || !strings.HasPrefix(n, "out-topic-") || seen[n] {
					t.Errorf("Name = %q: want a new legal name starting out-topic-", n)
				}
				seen[n] = true
			}
		})
	}
}

// TestEach: both brokers take a topic Topic creates and serve it.
func TestEach(t *testing.T) {
	Each(t, func(t *testing.T, b *Broker) {
		topic := b.Topic(t, "t", 2)
		cl := b.Client(t, kgo.DefaultProduceTopic(topic))
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("producing to %s on %s: %v", topic, b.Kind, err)
		}
	})
}

// TestOwnRestart: a broker of the test's own, killed and started again,
// is back on the same address with the records it had.
func TestOwnRestart(t *testing.T) {
	o := StartOwn(t)
	topic := o.Topic(t, "t", 1)
	addr := o.String()
	ctx := context.Background()
	p := kgo.Record{Topic: topic, Value: []byte("before")}
	if err := o.Client(t).ProduceSync(ctx, &p).FirstErr(); err != nil {
		t.Fatal(err)
	}
	o.Kill(t)
	o.Start(t)
	if o.String() != addr {
		t.Errorf("restarted on %s, was %s", o, addr)
	}
	cl := o.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for {
		fs := cl.PollFetches(ctx)
		if recs := fs.Records(); len(recs) > 0 {
			if string(recs[0].Value) != "before" {
				t.Errorf("read %q after the restart, want before", recs[0].Value)
			}
			return
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Logf("while the broker comes back: %v", errs[0].Err)
		}
	}
}
