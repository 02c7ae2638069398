package expansion

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/kafkaio"
)

// goReadPayload has the fields, names and types of the payload Beam's Go
// kafkaio.Read builds (its readPayload is unexported), so its schema and
// row are byte for byte what that SDK sends.
type goReadPayload struct {
	ConsumerConfig         map[string]string
	Topics                 []string
	KeyDeserializer        string
	ValueDeserializer      string
	StartReadTime          *int64
	MaxNumRecords          *int64
	MaxReadTime            *int64
	CommitOffsetInFinalize bool
	TimestampPolicy        string
}

// pyReadPayload is what Python's ReadFromKafka sends: snake_case names,
// nullable integers, numpy's int32 for redistribute_num_keys.
type pyReadPayload struct {
	ConsumerConfig         map[string]string `beam:"consumer_config"`
	Topics                 []string          `beam:"topics"`
	KeyDeserializer        string            `beam:"key_deserializer"`
	ValueDeserializer      string            `beam:"value_deserializer"`
	StartReadTime          *int64            `beam:"start_read_time"`
	MaxNumRecords          *int64            `beam:"max_num_records"`
	MaxReadTime            *int64            `beam:"max_read_time"`
	CommitOffsetInFinalize bool              `beam:"commit_offset_in_finalize"`
	TimestampPolicy        string            `beam:"timestamp_policy"`
	ConsumerPollingTimeout *int64            `beam:"consumer_polling_timeout"`
	Redistribute           *bool             `beam:"redistribute"`
	RedistributeNumKeys    *int32            `beam:"redistribute_num_keys"`
	AllowDuplicates        *bool             `beam:"allow_duplicates"`
}

// withStop and withExtra carry fields Beam's Go SDK never sends.
type withStop struct {
	goReadPayload
	StopReadTime *int64
}

type withExtra struct {
	ConsumerConfig map[string]string
	Topics         []string
	TopicPattern   string
}

type badTopics struct {
	ConsumerConfig map[string]string
	Topics         string
}

// goRead returns the payload kafkaio.Read(s, addr, servers, topics, opts...)
// starts from, before its options.
func goRead(servers string, topics ...string) goReadPayload {
	return goReadPayload{
		ConsumerConfig:    map[string]string{"bootstrap.servers": servers},
		Topics:            topics,
		KeyDeserializer:   byteArrayDeserializer,
		ValueDeserializer: byteArrayDeserializer,
		TimestampPolicy:   "ProcessingTime",
	}
}

func ptr[T any](v T) *T { return &v }

func TestReadConfig(t *testing.T) {
	tests := []struct {
		name    string
		urn     string
		payload any
		want    kafkaio.ReadConfig
	}{{
		name:    "go defaults",
		payload: goRead("localhost:9092", "t"),
		want: kafkaio.ReadConfig{
			BootstrapServers: []string{"localhost:9092"}, Topics: []string{"t"},
			Start: kafkaio.StartLatest, TimestampPolicy: kafkaio.TimeProcessing,
		},
	}, {
		name: "beam integration test read",
		payload: func() any {
			p := goRead("localhost:9092", "xlang_kafkaio_basic_test_1")
			p.MaxNumRecords = ptr[int64](1000)
			p.ConsumerConfig["auto.offset.reset"] = "earliest"
			return p
		}(),
		want: kafkaio.ReadConfig{
			BootstrapServers: []string{"localhost:9092"}, Topics: []string{"xlang_kafkaio_basic_test_1"},
			ConsumerConfig: map[string]string{"auto.offset.reset": "earliest"},
			Start:          kafkaio.StartEarliest, TimestampPolicy: kafkaio.TimeProcessing, MaxRecords: 1000,
		},
	}, {
		name: "start time, create time, read time, several servers",
		payload: func() any {
			p := goRead("a:1, b:2,", "t1", "t2")
			p.StartReadTime = ptr[int64](1700000000000)
			p.MaxReadTime = ptr[int64](30)
			p.TimestampPolicy = "CreateTime"
			p.ConsumerConfig["auto.offset.reset"] = "latest"
			return p
		}(),
		want: kafkaio.ReadConfig{
			BootstrapServers: []string{"a:1", "b:2"}, Topics: []string{"t1", "t2"},
			ConsumerConfig: map[string]string{"auto.offset.reset": "latest"},
			Start:          kafkaio.StartTime, StartTimeMillis: 1700000000000,
			TimestampPolicy: kafkaio.TimeCreate, MaxReadTimeMillis: 30000,
		},
	}, {
		name: "group resumes and commits",
		payload: func() any {
			p := goRead("k:9092", "t")
			p.ConsumerConfig["group.id"] = "g"
			p.ConsumerConfig["auto.offset.reset"] = "earliest"
			p.CommitOffsetInFinalize = true
			p.TimestampPolicy = "LogAppendTime"
			return p
		}(),
		want: kafkaio.ReadConfig{
			BootstrapServers: []string{"k:9092"}, Topics: []string{"t"},
			ConsumerConfig: map[string]string{"group.id": "g", "auto.offset.reset": "earliest"},
			Start:          kafkaio.StartCommitted, TimestampPolicy: kafkaio.TimeLogAppend,
			CommitOffsetsInFinalize: true,
		},
	}, {
		name:    "with metadata",
		urn:     ReadWithMetadataURN,
		payload: goRead("k:9092", "t"),
		want: kafkaio.ReadConfig{
			BootstrapServers: []string{"k:9092"}, Topics: []string{"t"},
			Start: kafkaio.StartLatest, TimestampPolicy: kafkaio.TimeProcessing, WithMetadata: true,
		},
	}, {
		name: "python names and tuning fields",
		payload: pyReadPayload{
			ConsumerConfig: map[string]string{"bootstrap.servers": "k:9092", "auto.offset.reset": "earliest"},
			Topics:         []string{"t"}, KeyDeserializer: byteArrayDeserializer, ValueDeserializer: byteArrayDeserializer,
			MaxNumRecords: ptr[int64](5), TimestampPolicy: "CreateTime",
			ConsumerPollingTimeout: ptr[int64](2), Redistribute: ptr(true), RedistributeNumKeys: ptr[int32](4), AllowDuplicates: ptr(true),
		},
		want: kafkaio.ReadConfig{
			BootstrapServers: []string{"k:9092"}, Topics: []string{"t"},
			ConsumerConfig: map[string]string{"auto.offset.reset": "earliest"},
			Start:          kafkaio.StartEarliest, TimestampPolicy: kafkaio.TimeCreate, MaxRecords: 5,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			urn := tt.urn
			if urn == "" {
				urn = ReadWithoutMetadataURN
			}
			got, err := readConfig(urn, beam.CrossLanguagePayload(tt.payload))
			if err != nil {
				t.Fatalf("readConfig: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("readConfig:\n got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestReadConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		want    []string // each must appear in the error
	}{{
		name:    "no bootstrap servers",
		payload: beam.CrossLanguagePayload(goRead("", "t")),
		want:    []string{"ConsumerConfig", "bootstrap.servers"},
	}, {
		name:    "no topics",
		payload: beam.CrossLanguagePayload(goRead("k:9092")),
		want:    []string{"field Topics", "no topics"},
	}, {
		name: "unknown timestamp policy",
		payload: func() []byte {
			p := goRead("k:9092", "t")
			p.TimestampPolicy = "EventTime"
			return beam.CrossLanguagePayload(p)
		}(),
		want: []string{"field TimestampPolicy", `"EventTime"`},
	}, {
		name: "java deserializer",
		payload: func() []byte {
			p := goRead("k:9092", "t")
			p.ValueDeserializer = "org.apache.kafka.common.serialization.LongDeserializer"
			return beam.CrossLanguagePayload(p)
		}(),
		want: []string{"field ValueDeserializer", "LongDeserializer"},
	}, {
		name: "commit without group",
		payload: func() []byte {
			p := goRead("k:9092", "t")
			p.CommitOffsetInFinalize = true
			return beam.CrossLanguagePayload(p)
		}(),
		want: []string{"field CommitOffsetInFinalize", `ConsumerConfig["group.id"]`},
	}, {
		name: "bad auto.offset.reset",
		payload: func() []byte {
			p := goRead("k:9092", "t")
			p.ConsumerConfig["auto.offset.reset"] = "smallest"
			return beam.CrossLanguagePayload(p)
		}(),
		want: []string{`ConsumerConfig["auto.offset.reset"]`, `"smallest"`},
	}, {
		name: "zero records",
		payload: func() []byte {
			p := goRead("k:9092", "t")
			p.MaxNumRecords = ptr[int64](0)
			return beam.CrossLanguagePayload(p)
		}(),
		want: []string{"field MaxNumRecords"},
	}, {
		name:    "stop read time",
		payload: beam.CrossLanguagePayload(withStop{goRead("k:9092", "t"), ptr[int64](5)}),
		want:    []string{"field StopReadTime", "not supported"},
	}, {
		name: "unknown field",
		payload: beam.CrossLanguagePayload(withExtra{
			ConsumerConfig: map[string]string{"bootstrap.servers": "k:9092"}, Topics: []string{"t"}, TopicPattern: "t.*",
		}),
		want: []string{"unknown field(s) TopicPattern"},
	}, {
		name:    "wrong type",
		payload: beam.CrossLanguagePayload(badTopics{map[string]string{"bootstrap.servers": "k:9092"}, "t"}),
		want:    []string{"field Topics", "want a list of strings"},
	}, {
		name:    "not a payload",
		payload: []byte("this is not a protocol buffer"),
		want:    []string{"ExternalConfigurationPayload"},
	}, {
		// The SDK's schema code panics on a field without a name.
		name: "malformed schema",
		payload: func() []byte {
			b, _ := proto.Marshal(&pipepb.ExternalConfigurationPayload{Schema: &pipepb.Schema{
				Fields: []*pipepb.Field{{Name: "", Type: &pipepb.FieldType{TypeInfo: &pipepb.FieldType_AtomicType{AtomicType: pipepb.AtomicType_STRING}}}},
			}})
			return b
		}(),
		want: []string{"ExternalConfigurationPayload"},
	}, {
		name: "empty payload",
		want: []string{"empty payload"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readConfig(ReadWithoutMetadataURN, tt.payload)
			if err == nil {
				t.Fatal("readConfig succeeded, want an error")
			}
			for _, w := range append(tt.want, ReadWithoutMetadataURN) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
