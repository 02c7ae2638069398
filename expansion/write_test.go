package expansion

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/weir-runner/weir/kafkaio"
)

// goWritePayload has the fields, names and types of the payload Beam's Go
// kafkaio.Write builds.
type goWritePayload struct {
	ProducerConfig  map[string]string
	Topic           string
	KeySerializer   string
	ValueSerializer string
}

func goWrite(servers, topic string) goWritePayload {
	return goWritePayload{
		ProducerConfig:  map[string]string{"bootstrap.servers": servers},
		Topic:           topic,
		KeySerializer:   byteArraySerializer,
		ValueSerializer: byteArraySerializer,
	}
}

func TestWriteConfig(t *testing.T) {
	tests := []struct {
		name    string
		payload goWritePayload
		want    kafkaio.WriteConfig
	}{{
		name:    "go defaults",
		payload: goWrite("localhost:9092", "t"),
		want:    kafkaio.WriteConfig{BootstrapServers: []string{"localhost:9092"}, Topic: "t"},
	}, {
		name: "producer config",
		payload: func() goWritePayload {
			p := goWrite("a:1,b:2", "t")
			p.ProducerConfig["acks"] = "all"
			return p
		}(),
		want: kafkaio.WriteConfig{
			BootstrapServers: []string{"a:1", "b:2"}, Topic: "t",
			ProducerConfig: map[string]string{"acks": "all"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := writeConfig(WriteURN, beam.CrossLanguagePayload(tt.payload))
			if err != nil {
				t.Fatalf("writeConfig: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("writeConfig:\n got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestWriteConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		payload goWritePayload
		want    []string
	}{{
		name:    "no bootstrap servers",
		payload: goWrite(" , ", "t"),
		want:    []string{"field ProducerConfig", "bootstrap.servers"},
	}, {
		name:    "no topic",
		payload: goWrite("k:9092", ""),
		want:    []string{"field Topic", "no topic"},
	}, {
		name: "java serializer",
		payload: func() goWritePayload {
			p := goWrite("k:9092", "t")
			p.KeySerializer = "org.apache.kafka.common.serialization.StringSerializer"
			return p
		}(),
		want: []string{"field KeySerializer", "StringSerializer"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := writeConfig(WriteURN, beam.CrossLanguagePayload(tt.payload))
			if err == nil {
				t.Fatal("writeConfig succeeded, want an error")
			}
			for _, w := range append(tt.want, WriteURN) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
