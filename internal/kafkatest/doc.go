// Package kafkatest gives a test a Kafka broker: kfake (franz-go's
// Kafka-protocol broker) in the test's own process, and a real Apache
// Kafka broker when one is running, so the same test checks weir against
// both.
//
// The real broker is the one WEIR_KAFKA_BROKERS names (host:port, comma
// separated): internal/tools/kafka.sh starts one (`make kafka` prints the
// address; `make test` starts its own and sets the variable). Without it
// the real-broker subtests skip, saying how to get one; with
// WEIR_REQUIRE_KAFKA=1 (make test) they fail instead, so CI cannot pass
// without having run them.
//
// A test's loop:
//
//	kafkatest.Each(t, func(t *testing.T, b *kafkatest.Broker) {
//		in := b.Topic(t, "in", 3)   // a new topic, unique to this test
//		cl := b.Client(t)           // closed when the test ends
//		...
//	})
//
// Each runs the function as the subtests "kfake" and "kafka". One real
// broker serves every test of a run and outlives it, so everything a test
// names on it (topics, consumer groups, transactional ids) goes through
// Broker.Name, which makes the name unique to the test and the process.
// Tests that steer the broker (kfake's ControlKey to inject errors) use
// Fake; tests of what only a real broker does use Real; tests that stop,
// kill or restart a real broker take one of their own with StartOwn.
package kafkatest
