package expansion

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/weir-runner/weir/kafkaio"
)

// pythonPayload reads a payload Beam's Python SDK 2.77 sent, as
// python/capture_payloads.py wrote it: the URN, then the payload in hex.
func pythonPayload(t *testing.T, name string) (string, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "python", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	urn, h, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if !ok {
		t.Fatalf("%s: want the URN and the payload in hex on two lines", name)
	}
	payload, err := hex.DecodeString(strings.TrimSpace(h))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return urn, payload
}

// TestPythonReadPayloads decodes what Python's ReadFromKafka sends: every
// field of its 2.77 schema, with its defaults (nulls included) and with
// values set.
func TestPythonReadPayloads(t *testing.T) {
	tests := []struct {
		name string
		want kafkaio.ReadConfig
	}{{
		// consumer_polling_timeout 2, redistribute false, redistribute_num_keys 0,
		// allow_duplicates false; start_read_time, max_num_records,
		// max_read_time, dynamic_read_poll_interval_seconds,
		// consumer_factory_fn_class and _params null.
		name: "read_defaults",
		want: kafkaio.ReadConfig{
			BootstrapServers: []string{"127.0.0.1:9092"}, Topics: []string{"t"},
			Start: kafkaio.StartLatest, TimestampPolicy: kafkaio.TimeProcessing,
		},
	}, {
		name: "read_bounded",
		want: kafkaio.ReadConfig{
			BootstrapServers: []string{"127.0.0.1:9092"}, Topics: []string{"t1", "t2"},
			ConsumerConfig: map[string]string{"auto.offset.reset": "earliest"},
			Start:          kafkaio.StartEarliest, TimestampPolicy: kafkaio.TimeProcessing, MaxRecords: 10,
		},
	}, {
		name: "read_metadata_commit",
		want: kafkaio.ReadConfig{
			BootstrapServers: []string{"127.0.0.1:9092"}, Topics: []string{"t"},
			ConsumerConfig: map[string]string{"group.id": "g"},
			Start:          kafkaio.StartTime, StartTimeMillis: 5, MaxReadTimeMillis: 3000,
			TimestampPolicy: kafkaio.TimeCreate, CommitOffsetsInFinalize: true, WithMetadata: true,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			urn, payload := pythonPayload(t, tt.name)
			got, err := readConfig(urn, payload)
			if err != nil {
				t.Fatalf("readConfig: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("readConfig:\n got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

// TestPythonPayloadsRefused: what weir cannot honour is refused at
// expansion, naming the field or transform.
func TestPythonPayloadsRefused(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"read_dynamic", []string{"field dynamic_read_poll_interval_seconds", "not supported", "discovers no new"}},
		{"read_consumer_factory", []string{"field consumer_factory_fn_class", "field consumer_factory_fn_params", "not supported"}},
		{"read_long_deserializer", []string{"field key_deserializer", "LongDeserializer"}},
		{"write_with_headers", []string{WriteWithHeadersURN, "not supported", "with_headers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			urn, payload := pythonPayload(t, tt.name)
			req := goRequest(urn, payload, map[string]string{"i0": "n3"}, kvComponents(urnBytesCoder))
			if strings.Contains(urn, "read") {
				req = goRequest(urn, payload, nil, nil)
			}
			res, err := quietService().Expand(context.Background(), req)
			if err != nil {
				t.Fatalf("Expand: RPC error %v", err)
			}
			if res.GetError() == "" {
				t.Fatalf("Expand succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(res.GetError(), w) {
					t.Errorf("error %q does not mention %q", res.GetError(), w)
				}
			}
		})
	}
}

func TestPythonWritePayload(t *testing.T) {
	urn, payload := pythonPayload(t, "write")
	got, err := writeConfig(urn, payload)
	if err != nil {
		t.Fatalf("writeConfig: %v", err)
	}
	want := kafkaio.WriteConfig{BootstrapServers: []string{"127.0.0.1:9092"}, Topic: "t"}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("writeConfig:\n got %+v\nwant %+v", *got, want)
	}
}

// TestPythonTuningChecked: the tuning fields are accepted, but checked as
// Java checks them.
func TestPythonTuningChecked(t *testing.T) {
	base := func() pyReadPayload {
		return pyReadPayload{
			ConsumerConfig: map[string]string{"bootstrap.servers": "k:9092"},
			Topics:         []string{"t"}, KeyDeserializer: byteArrayDeserializer, ValueDeserializer: byteArrayDeserializer,
			TimestampPolicy: "ProcessingTime", ConsumerPollingTimeout: ptr[int64](2),
		}
	}
	p := base()
	p.ConsumerPollingTimeout = ptr[int64](0)
	if _, err := readConfig(ReadWithoutMetadataURN, beam.CrossLanguagePayload(p)); err == nil || !strings.Contains(err.Error(), "field consumer_polling_timeout: 0 s") {
		t.Errorf("polling timeout 0: got %v, want an error naming consumer_polling_timeout", err)
	}
	p = base()
	p.RedistributeNumKeys = ptr[int32](-1)
	if _, err := readConfig(ReadWithoutMetadataURN, beam.CrossLanguagePayload(p)); err == nil || !strings.Contains(err.Error(), "field redistribute_num_keys") {
		t.Errorf("redistribute_num_keys -1: got %v, want an error naming it", err)
	}
}
