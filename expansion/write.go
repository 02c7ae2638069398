package expansion

import (
	"errors"
	"fmt"

	"github.com/weir-runner/weir/kafkaio"
)

// writeConfig maps the configuration row of a Beam kafka write (Java's
// KafkaIO.Write.External.Configuration) onto weir's WriteConfig. It reports
// every problem at once.
func writeConfig(urn string, payload []byte) (*kafkaio.WriteConfig, error) {
	f, err := decodeFields(urn, payload)
	if err != nil {
		return nil, err
	}
	c := &kafkaio.WriteConfig{}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	producer, servers, err := clientConfig(f, "producer_config")
	add(err)
	c.ProducerConfig, c.BootstrapServers = producer, servers

	topic, _, err := f.string("topic")
	add(err)
	if err == nil && topic == "" {
		add(fmt.Errorf("%s: field %s: no topic", urn, f.spell("topic")))
	}
	c.Topic = topic

	add(needClass(f, "key_serializer", byteArraySerializer))
	add(needClass(f, "value_serializer", byteArraySerializer))
	add(f.unused())

	if len(errs) == 0 {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", urn, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}
