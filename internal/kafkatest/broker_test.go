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
