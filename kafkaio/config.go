package kafkaio

import (
	"encoding/json"
	"errors"
	"fmt"
)

// URNs of weir's native Kafka transforms. Their payload is the JSON
// encoding of ReadConfig or WriteConfig.
const (
	ReadURN  = "beam:transform:weir:kafka_read:v1"
	WriteURN = "beam:transform:weir:kafka_write:v1"
)

// Start positions of a read.
const (
	StartEarliest  = "earliest"  // the first offset of each partition
	StartLatest    = "latest"    // the end of each partition when the read starts
	StartCommitted = "committed" // the consumer group's committed offsets (needs group.id)
	StartTime      = "time"      // the first offset at or after StartTimeMillis, in every partition
)

// Stop positions of a read: where each partition ends.
const (
	// StopLatest ends each partition at the end it had when the read
	// first started (its last stable offset under read_committed), as
	// Flink's KafkaSource.setBounded(OffsetsInitializer.latest()): a
	// backfill of what is there now.
	StopLatest = "latest"
)

// Timestamp policies: where a record's event time comes from.
const (
	TimeCreate       = "create_time"     // the producer's timestamp (Kafka's default)
	TimeLogAppend    = "log_append_time" // the broker's append time
	TimeProcessing   = "processing_time" // the wall clock when the record is read
	TimeFromPipeline = "extracted"       // the pipeline re-stamps records; the source's watermark uses create time
)

// ReadConfig configures a native Kafka read. Durations are milliseconds.
type ReadConfig struct {
	BootstrapServers []string          `json:"bootstrap_servers"`
	Topics           []string          `json:"topics"`
	ConsumerConfig   map[string]string `json:"consumer_config,omitempty"` // group.id, isolation.level, ...

	Start           string `json:"start,omitempty"` // StartEarliest (default), StartLatest, StartCommitted, StartTime
	StartTimeMillis int64  `json:"start_time_millis,omitempty"`

	TimestampPolicy string `json:"timestamp_policy,omitempty"` // TimeCreate (default), ...
	// MaxOutOfOrdernessMillis bounds how far behind a partition's largest
	// event time a later record may be: the partition's watermark is that
	// maximum minus this bound.
	MaxOutOfOrdernessMillis int64 `json:"max_out_of_orderness_millis,omitempty"`
	// IdleTimeoutMillis: a partition without records this long leaves the
	// source's watermark minimum until its next record. 0 means never idle.
	IdleTimeoutMillis int64 `json:"idle_timeout_millis,omitempty"`

	// AlignmentGroup names a watermark alignment group shared by every
	// source (of this job) that names it; empty means no alignment.
	AlignmentGroup string `json:"alignment_group,omitempty"`
	// MaxDriftMillis: a partition whose watermark passes the group minimum
	// plus this is paused until the minimum catches up.
	MaxDriftMillis int64 `json:"max_drift_millis,omitempty"`
	// UpdateIntervalMillis is how often the group minimum is computed and
	// announced; default 1000.
	UpdateIntervalMillis int64 `json:"update_interval_millis,omitempty"`
	// SampleBuffer is how many of a partition's watermarks, sampled once
	// per update interval, the pause decision looks back over: a running
	// partition is paused when the oldest of them is past the group's
	// bound, so it may run about that many intervals ahead before it
	// pauses (Flink's FLINK-37399). Default 0, the latest watermark: weir
	// decides against the live group minimum, never a stale announcement,
	// so the buffer buys no speed and only loosens the bound
	// (docs/kafka.md measures it).
	SampleBuffer *int `json:"sample_buffer,omitempty"`

	// CoalesceWatermarks, unset or true, holds a watermark advance back
	// while a consumer of the read has not taken the last one sent to it
	// (executor.Output.WatermarkQueued): a consumer that is behind, as in a
	// backfill, then gets one advance per queue of data instead of one per
	// poll, each of which makes it fire timers in bundles of their own.
	// false sends the watermark after every poll that moves it.
	CoalesceWatermarks *bool `json:"coalesce_watermarks,omitempty"`

	// Stop, if StopLatest, makes the read bounded by the partitions' ends
	// when it first starts: each partition ends (and leaves the watermark
	// and its alignment group) as soon as it is read to there, and the
	// read ends with the last. A restored read keeps the ends it started
	// with. Empty means no end.
	Stop string `json:"stop,omitempty"`

	// MaxRecords and MaxReadTimeMillis make the read bounded: it ends after
	// that many records in total, or that long. 0 means unbounded.
	MaxRecords        int64 `json:"max_records,omitempty"`
	MaxReadTimeMillis int64 `json:"max_read_time_millis,omitempty"`

	// CommitOffsetsInFinalize commits the offsets read to the consumer
	// group (consumer_config["group.id"]) once their output is committed,
	// as Beam's KafkaIO commitOffsetsInFinalize does, so the group's lag
	// shows progress and a later read with StartCommitted resumes there.
	CommitOffsetsInFinalize bool `json:"commit_offsets_in_finalize,omitempty"`

	// Parallelism is the number of subtasks the read runs as, each reading
	// its share of the partitions (docs/kafka.md, Parallelism); 0 means
	// one. It is part of the job's shape: a checkpoint restores only at
	// the parallelism it was taken with.
	Parallelism int `json:"parallelism,omitempty"`

	// WithMetadata makes the output a KafkaRecord (topic, partition,
	// offset, timestamp, headers, key, value) rather than KV<key, value>.
	WithMetadata bool `json:"with_metadata,omitempty"`
}

// Delivery semantics of a write.
const (
	AtLeastOnce = "at_least_once" // produce as records arrive; retried records may repeat
	ExactlyOnce = "exactly_once"  // one transaction per completed checkpoint; needs checkpoints
)

// WriteConfig configures a native Kafka write of KV<[]byte, []byte>.
type WriteConfig struct {
	BootstrapServers []string          `json:"bootstrap_servers"`
	Topic            string            `json:"topic"`
	ProducerConfig   map[string]string `json:"producer_config,omitempty"`

	// Semantic is AtLeastOnce (the default) or ExactlyOnce. Exactly once
	// keeps records in the job's checkpointed state and writes them, when
	// a checkpoint completes, in one Kafka transaction per sink subtask;
	// readers with isolation.level read_committed see each once. The job
	// must take checkpoints (weir_checkpoint_interval).
	Semantic string `json:"semantic,omitempty"`
	// TransactionalID prefixes the transactional id of each sink subtask
	// (PREFIX-SUBTASK) and names its marker consumer group
	// (PREFIX-SUBTASK.marker). It must be the same when a job restarts
	// from a checkpoint, and unique to the sink among every job writing to
	// the cluster: two running jobs with the same id fence each other
	// (the older fails). Default: weir-TOPIC-TRANSFORM NAME.
	TransactionalID string `json:"transactional_id,omitempty"`
}

// IsExactlyOnce reports whether the write is exactly once.
func (c *WriteConfig) IsExactlyOnce() bool { return c.Semantic == ExactlyOnce }

// Validate reports what is wrong with the configuration, every problem at
// once.
func (c *ReadConfig) Validate() error {
	var errs []error
	if len(c.BootstrapServers) == 0 {
		errs = append(errs, errors.New("no bootstrap servers"))
	}
	if len(c.Topics) == 0 {
		errs = append(errs, errors.New("no topics"))
	}
	switch c.Start {
	case "", StartEarliest, StartLatest, StartTime:
	case StartCommitted:
		if c.ConsumerConfig["group.id"] == "" {
			errs = append(errs, errors.New(`start "committed" needs consumer_config["group.id"]`))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown start %q", c.Start))
	}
	switch c.Stop {
	case "", StopLatest:
	default:
		errs = append(errs, fmt.Errorf("unknown stop %q (want %q or none)", c.Stop, StopLatest))
	}
	switch c.TimestampPolicy {
	case "", TimeCreate, TimeLogAppend, TimeProcessing, TimeFromPipeline:
	default:
		errs = append(errs, fmt.Errorf("unknown timestamp policy %q", c.TimestampPolicy))
	}
	for name, v := range map[string]int64{
		"max_out_of_orderness_millis": c.MaxOutOfOrdernessMillis, "idle_timeout_millis": c.IdleTimeoutMillis,
		"max_drift_millis": c.MaxDriftMillis, "update_interval_millis": c.UpdateIntervalMillis,
		"max_records": c.MaxRecords, "max_read_time_millis": c.MaxReadTimeMillis,
		"parallelism": int64(c.Parallelism),
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s is negative (%d)", name, v))
		}
	}
	if c.SampleBuffer != nil && *c.SampleBuffer < 0 {
		errs = append(errs, fmt.Errorf("sample_buffer is negative (%d)", *c.SampleBuffer))
	}
	if c.AlignmentGroup != "" && c.MaxDriftMillis == 0 {
		errs = append(errs, fmt.Errorf("alignment group %q needs max_drift_millis", c.AlignmentGroup))
	}
	return errors.Join(errs...)
}

// Bounded reports whether the read ends by itself.
func (c *ReadConfig) Bounded() bool {
	return c.MaxRecords > 0 || c.MaxReadTimeMillis > 0 || c.Stop != ""
}

// Validate reports what is wrong with the configuration.
func (c *WriteConfig) Validate() error {
	var errs []error
	if len(c.BootstrapServers) == 0 {
		errs = append(errs, errors.New("no bootstrap servers"))
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("no topic"))
	}
	switch c.Semantic {
	case "", AtLeastOnce, ExactlyOnce:
	default:
		errs = append(errs, fmt.Errorf("unknown semantic %q: want %q or %q", c.Semantic, AtLeastOnce, ExactlyOnce))
	}
	return errors.Join(errs...)
}

// DecodeRead decodes and validates a ReadURN payload.
func DecodeRead(payload []byte) (*ReadConfig, error) {
	var c ReadConfig
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("kafka read payload: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("kafka read: %w", err)
	}
	return &c, nil
}

// DecodeWrite decodes and validates a WriteURN payload.
func DecodeWrite(payload []byte) (*WriteConfig, error) {
	var c WriteConfig
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("kafka write payload: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("kafka write: %w", err)
	}
	return &c, nil
}
