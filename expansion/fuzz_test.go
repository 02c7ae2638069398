package expansion

import (
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// FuzzConfig checks that any payload in a Kafka read or write expansion
// request decodes to a configuration or an error, never a panic.
func FuzzConfig(f *testing.F) {
	urns := []string{ReadWithoutMetadataURN, ReadWithMetadataURN, WriteURN, WriteWithHeadersURN}
	f.Add(uint8(0), beam.CrossLanguagePayload(goReadPayload{
		ConsumerConfig: map[string]string{"bootstrap.servers": "localhost:9092"}, Topics: []string{"t"},
		KeyDeserializer: byteArrayDeserializer, ValueDeserializer: byteArrayDeserializer}))
	f.Add(uint8(2), beam.CrossLanguagePayload(goWrite("localhost:9092", "t")))
	f.Fuzz(func(t *testing.T, sel uint8, payload []byte) {
		urn := urns[int(sel)%len(urns)]
		if sel%4 < 2 {
			_, _ = readConfig(urn, payload)
		} else {
			_, _ = writeConfig(urn, payload)
		}
	})
}

// FuzzReadConfigRoundTrip encodes a read configuration as Beam's Go SDK
// does and checks weir decodes the same servers and topic.
func FuzzReadConfigRoundTrip(f *testing.F) {
	f.Add("localhost:9092", "t")
	f.Fuzz(func(t *testing.T, server, topic string) {
		c, err := readConfig(ReadWithoutMetadataURN, beam.CrossLanguagePayload(goReadPayload{
			ConsumerConfig: map[string]string{"bootstrap.servers": server}, Topics: []string{topic},
			KeyDeserializer: byteArrayDeserializer, ValueDeserializer: byteArrayDeserializer}))
		if err != nil {
			return
		}
		if !reflect.DeepEqual(c.Topics, []string{topic}) {
			t.Fatalf("topic %q decodes as %q", topic, c.Topics)
		}
	})
}
