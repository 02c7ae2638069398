package runner

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/kafka"
	"github.com/weir-runner/weir/translate"
)

// kafkaJob is what a job's Kafka stages share: its alignment groups, which
// may span several sources, and the metrics of its readers.
type kafkaJob struct {
	j       *Job
	groups  *kafka.Groups
	metrics *kafka.Metrics
}

func newKafkaJob(j *Job) *kafkaJob {
	groups := kafka.NewGroups()
	k := &kafkaJob{j: j, groups: groups, metrics: kafka.NewMetrics(groups)}
	j.Metrics.AddSource(k.metrics.MonitoringInfos)
	j.kafka.Store(k.metrics)
	return k
}

// node makes n run a Kafka stage. A read runs as one subtask that reads
// every partition: its watermark is the minimum over its partitions that
// are not idle, which one subtask computes exactly (an idle subtask could
// not tell its consumers so). Writes run on every subtask, each with its
// own producer.
func (k *kafkaJob) node(n *executor.Node, s *translate.Stage, plan *translate.Plan) error {
	switch s.Kind {
	case translate.KindKafkaRead:
		if unknown := kafka.UnknownConsumerKeys(s.KafkaRead); len(unknown) > 0 {
			sort.Strings(unknown)
			k.j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "kafka source %s: consumer_config keys %s are not used by weir", s.Name, strings.Join(unknown, ", "))
		}
		if s.KafkaRead.CommitOffsetsInFinalize && !s.KafkaRead.Bounded() && !takesCheckpoints(k.j) {
			k.j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "kafka source %s: commit_offset_in_finalize commits group %q's offsets when a checkpoint completes or the read ends; this unbounded read in a job without --%s commits none until it ends",
				s.Name, s.KafkaRead.ConsumerConfig["group.id"], CheckpointIntervalOption)
		}
		n.Parallelism = 1
		onError := k.onError()
		// A new Source for every run of the graph: it keeps the offsets
		// it has still to commit.
		n.NewSource = func(int, *executor.Output) (executor.Source, error) {
			return &kafka.Source{Config: s.KafkaRead, Transform: s.Transforms[0], Metrics: k.metrics,
				Drain:   k.j.DrainRequested(),
				Options: kafka.ReaderOptions{Name: s.Name, Groups: k.groups, OnError: onError}}, nil
		}
	case translate.KindKafkaWrite:
		if unknown := kafka.UnknownProducerKeys(s.KafkaWrite); len(unknown) > 0 {
			sort.Strings(unknown)
			k.j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "kafka sink %s: producer_config keys %s are not used by weir", s.Name, strings.Join(unknown, ", "))
		}
		in, ok := plan.PColls[s.MainInput()]
		if !ok {
			return fmt.Errorf("stage %s: no input", s.Name)
		}
		n.New = func(sub int, _ *executor.Output) (executor.Operator, error) {
			w, err := kafka.NewWriter(s.KafkaWrite, kafka.WriterOptions{Name: fmt.Sprintf("%s[%d]", s.Name, sub), OnError: k.onError()})
			if err != nil {
				return nil, err
			}
			return &kafka.Sink{Writer: w, In: in.Codec}, nil
		}
	default:
		return fmt.Errorf("stage %s: %v is not a Kafka stage", s.Name, s.Kind)
	}
	return nil
}

// onError turns a reader's or writer's retried errors into job warnings:
// each new error at once, a repeated one at most every ten seconds, so a
// broker that stays down is visible without flooding the job's messages.
func (k *kafkaJob) onError() func(error) {
	var mu sync.Mutex
	var last string
	var at time.Time
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		msg := err.Error()
		if msg == last && time.Since(at) < 10*time.Second {
			return
		}
		last, at = msg, time.Now()
		k.j.Logf(jobpb.JobMessage_JOB_MESSAGE_WARNING, "%s", msg)
	}
}
