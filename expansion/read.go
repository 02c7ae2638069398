package expansion

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weir-runner/weir/kafkaio"
)

// Beam's kafkaio URNs, as registered by Java's KafkaIO and used by the Go
// and Python SDKs.
const (
	ReadWithoutMetadataURN = "beam:transform:org.apache.beam:kafka_read_without_metadata:v1"
	ReadWithMetadataURN    = "beam:transform:org.apache.beam:kafka_read_with_metadata:v1"
	WriteURN               = "beam:transform:org.apache.beam:kafka_write:v1"
	// WriteWithHeadersURN (Python's WriteToKafka(with_headers=True)) is
	// refused by name: weir's write takes no rows.
	WriteWithHeadersURN = "beam:transform:org.apache.beam:kafka_write_with_headers:v1"
)

// The only (de)serializers weir honours: keys and values stay raw bytes.
const (
	byteArrayDeserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
	byteArraySerializer   = "org.apache.kafka.common.serialization.ByteArraySerializer"
)

// Beam's timestamp policy names (Java's TimestampPolicyFactory).
var timestampPolicies = map[string]string{
	"ProcessingTime": kafkaio.TimeProcessing,
	"CreateTime":     kafkaio.TimeCreate,
	"LogAppendTime":  kafkaio.TimeLogAppend,
}

// Consumer and producer configuration keys with a home of their own.
const (
	keyBootstrap   = "bootstrap.servers"
	keyOffsetReset = "auto.offset.reset"
	keyGroupID     = "group.id"
)

// readConfig maps the configuration row of a Beam kafka read (Java's
// KafkaIO.Read.External.Configuration) onto weir's ReadConfig. It reports
// every problem at once.
func readConfig(urn string, payload []byte) (*kafkaio.ReadConfig, error) {
	f, err := decodeFields(urn, payload)
	if err != nil {
		return nil, err
	}
	c := &kafkaio.ReadConfig{WithMetadata: urn == ReadWithMetadataURN}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	consumer, servers, err := clientConfig(f, "consumer_config")
	add(err)
	c.ConsumerConfig, c.BootstrapServers = consumer, servers

	topics, ok, err := f.strings("topics")
	add(err)
	switch {
	case err != nil:
	case !ok || len(topics) == 0:
		add(fmt.Errorf("%s: field %s: no topics", urn, f.spell("topics")))
	default:
		for _, t := range topics {
			if t == "" {
				add(fmt.Errorf("%s: field %s: an empty topic name", urn, f.spell("topics")))
			}
		}
		c.Topics = topics
	}

	add(needClass(f, "key_deserializer", byteArrayDeserializer))
	add(needClass(f, "value_deserializer", byteArrayDeserializer))
	add(readStart(f, c))
	add(readBounds(f, c))
	add(readTimestampPolicy(f, c))

	commit, err := f.bool("commit_offset_in_finalize")
	add(err)
	if commit && c.ConsumerConfig[keyGroupID] == "" {
		add(fmt.Errorf("%s: field %s: committing offsets needs %s[%q]", urn, f.spell("commit_offset_in_finalize"), f.spell("consumer_config"), keyGroupID))
	}
	c.CommitOffsetsInFinalize = commit

	add(readTuning(f))
	// Java-only ways to build the consumer, and partition discovery, which
	// weir's reader does not do: set, they would change what is read or how
	// the brokers are reached, so they are refused, never dropped.
	add(refuse(f, "dynamic_read_poll_interval_seconds",
		"weir reads the partitions the topics have when the read starts and discovers no new ones"))
	add(refuse(f, "consumer_factory_fn_class", "weir runs no Java consumer factory; its Kafka client is franz-go"))
	add(refuse(f, "consumer_factory_fn_params", "weir runs no Java consumer factory; its Kafka client is franz-go"))
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

// clientConfig reads a consumer or producer configuration map and takes its
// bootstrap servers out: they have a field of their own.
func clientConfig(f *fields, name string) (map[string]string, []string, error) {
	m, ok, err := f.stringMap(name)
	if err != nil {
		return nil, nil, err
	}
	var servers []string
	for _, s := range strings.Split(m[keyBootstrap], ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	if !ok || len(servers) == 0 {
		return nil, nil, fmt.Errorf("%s: field %s: no %q", f.urn, f.spell(name), keyBootstrap)
	}
	delete(m, keyBootstrap)
	if len(m) == 0 {
		m = nil
	}
	return m, servers, nil
}

// needClass accepts a Java (de)serializer class only if it is the byte array
// one: weir moves keys and values as bytes and cannot run Java classes.
func needClass(f *fields, name, want string) error {
	got, ok, err := f.string(name)
	if err != nil || !ok || got == want {
		return err
	}
	return fmt.Errorf("%s: field %s: %q is not supported, only %s (weir reads and writes raw bytes)", f.urn, f.spell(name), got, want)
}

// readStart picks where each partition starts, as Java's KafkaIO does: the
// start read time wins; otherwise a consumer group resumes from its
// committed offsets; otherwise auto.offset.reset decides, and Kafka's default
// for it is latest. With a group, auto.offset.reset stays in ConsumerConfig
// for partitions the group has not committed yet.
func readStart(f *fields, c *kafkaio.ReadConfig) error {
	var errs []error
	ms, atTime, err := f.int64("start_read_time")
	switch {
	case err != nil:
		errs = append(errs, err)
	case atTime && ms < 0:
		errs = append(errs, fmt.Errorf("%s: field %s: %d ms is before the epoch", f.urn, f.spell("start_read_time"), ms))
	}
	if _, ok, err := f.int64("stop_read_time"); err != nil {
		errs = append(errs, err)
	} else if ok {
		errs = append(errs, fmt.Errorf("%s: field %s: not supported by weir's Kafka read", f.urn, f.spell("stop_read_time")))
	}

	group := c.ConsumerConfig[keyGroupID] != ""
	switch reset := c.ConsumerConfig[keyOffsetReset]; reset {
	case "", "latest":
		c.Start = kafkaio.StartLatest
	case "earliest":
		c.Start = kafkaio.StartEarliest
	case "none":
		// Kafka fails a partition without a committed offset, and only a
		// group has committed offsets.
		if !group {
			errs = append(errs, fmt.Errorf("%s: field %s[%q]: \"none\" needs %[2]s[%[4]q]", f.urn, f.spell("consumer_config"), keyOffsetReset, keyGroupID))
		}
	default:
		errs = append(errs, fmt.Errorf("%s: field %s[%q]: %q is not one of earliest, latest, none", f.urn, f.spell("consumer_config"), keyOffsetReset, reset))
	}
	if group {
		c.Start = kafkaio.StartCommitted
	}
	if atTime {
		c.Start, c.StartTimeMillis = kafkaio.StartTime, ms
	}
	return errors.Join(errs...)
}

// readBounds maps the bounds that make a read end by itself.
func readBounds(f *fields, c *kafkaio.ReadConfig) error {
	var errs []error
	n, ok, err := f.int64("max_num_records")
	switch {
	case err != nil:
		errs = append(errs, err)
	case ok && n <= 0:
		errs = append(errs, fmt.Errorf("%s: field %s: %d, want a positive count", f.urn, f.spell("max_num_records"), n))
	case ok:
		c.MaxRecords = n
	}
	secs, ok, err := f.int64("max_read_time")
	switch {
	case err != nil:
		errs = append(errs, err)
	case ok && secs <= 0:
		errs = append(errs, fmt.Errorf("%s: field %s: %d s, want a positive number of seconds", f.urn, f.spell("max_read_time"), secs))
	case ok:
		ms, err := secondsToMillis(secs)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: field %s: %d s: %w", f.urn, f.spell("max_read_time"), secs, err))
		}
		c.MaxReadTimeMillis = ms
	}
	return errors.Join(errs...)
}

// readTimestampPolicy maps Beam's policy names. Absent means Java's default,
// processing time; CreateTime allows no out-of-orderness, as Java's
// withCreateTime(Duration.ZERO) does for cross-language reads.
func readTimestampPolicy(f *fields, c *kafkaio.ReadConfig) error {
	name, ok, err := f.string("timestamp_policy")
	if err != nil {
		return err
	}
	if !ok {
		c.TimestampPolicy = kafkaio.TimeProcessing
		return nil
	}
	p, known := timestampPolicies[name]
	if !known {
		return fmt.Errorf("%s: field %s: %q is not one of ProcessingTime, CreateTime, LogAppendTime", f.urn, f.spell("timestamp_policy"), name)
	}
	c.TimestampPolicy = p
	return nil
}

// readTuning checks the fields that tune Java's reader and change no
// output, as Java checks them, and accepts them:
//
//   - consumer_polling_timeout (seconds, Python sends 2): how long one poll
//     of Java's consumer waits before its SDF checkpoints. weir's reader
//     polls in a loop for as long as the read runs, so no record is missed
//     whatever it is; Java refuses a value <= 0, so does weir.
//   - redistribute, redistribute_num_keys, allow_duplicates: a
//     Redistribute after the read, spreading records over workers. weir's
//     stages after a read run on every core already, and its read never
//     duplicates records, so allow_duplicates (a permission, not a request)
//     changes nothing either.
func readTuning(f *fields) error {
	var errs []error
	secs, ok, err := f.int64("consumer_polling_timeout")
	switch {
	case err != nil:
		errs = append(errs, err)
	case ok && secs <= 0:
		errs = append(errs, fmt.Errorf("%s: field %s: %d s, want a positive number of seconds", f.urn, f.spell("consumer_polling_timeout"), secs))
	}
	n, ok, err := f.int64("redistribute_num_keys")
	switch {
	case err != nil:
		errs = append(errs, err)
	case ok && n < 0:
		errs = append(errs, fmt.Errorf("%s: field %s: %d, want a count >= 0", f.urn, f.spell("redistribute_num_keys"), n))
	}
	for _, name := range []string{"redistribute", "allow_duplicates"} {
		if _, err := f.bool(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// refuse fails a field that is set (present and not null, nor an empty
// map or list, which Python sends for None in some versions), saying why.
func refuse(f *fields, name, why string) error {
	fd, ok := f.lookup(name)
	if !ok || isEmpty(fd) {
		return nil
	}
	return f.errorf(fd, "not supported: %s", why)
}
