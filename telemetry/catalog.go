package telemetry

// Kinds of instrument. Counters are cumulative totals since the job
// started; gauges are the value at the sample; an up-down counter is a
// total that may fall (a user counter can be decremented).
const (
	kindCounter = "counter"
	kindGauge   = "gauge"
	kindUpDown  = "updowncounter"
)

// Label sets, as docs/metrics.md lists them.
const (
	lJob       = "job, job_name"
	lStage     = lJob + ", stage"
	lSubtask   = lStage + ", subtask"
	lPartition = lStage + ", messaging.system, messaging.destination.name, messaging.destination.partition.id"
)

// Metric is one instrument weir exports.
type Metric struct {
	Name, Unit, Kind, Labels, Description string
}

// Catalog is every metric weir exports, in docs/metrics.md's order.
var Catalog = []Metric{
	// Subtasks.
	{"weir.subtask.elements", "{element}", kindCounter, lSubtask + ", direction (in, out)", "elements the subtask took in and emitted"},
	{"weir.subtask.bytes", "By", kindCounter, lSubtask + ", direction (in, out)", "encoded bytes the subtask took in and emitted"},
	{"weir.subtask.time", "s", kindCounter, lSubtask + ", state (busy, idle, backpressured)", "time busy, waiting for input, and waiting for room downstream"},
	{"weir.subtask.busy.ratio", "1", kindGauge, lSubtask, "share of the last sample's interval spent busy"},
	{"weir.subtask.idle.ratio", "1", kindGauge, lSubtask, "share of the last sample's interval spent waiting for input"},
	{"weir.subtask.backpressured.ratio", "1", kindGauge, lSubtask, "share spent blocked on output, as Flink's backPressuredTimeMsPerSecond"},
	{"weir.subtask.queue.depth", "{message}", kindGauge, lSubtask, "messages waiting in the subtask's input queue"},
	{"weir.subtask.queue.capacity", "{message}", kindGauge, lSubtask, "the input queue's bound"},
	{"weir.subtask.watermark", "ms", kindGauge, lSubtask + ", direction (input, output)", "watermark as milliseconds since the epoch; absent at the start of time, and at the end of time once the input ended"},
	{"weir.subtask.bundles", "{bundle}", kindCounter, lSubtask, "SDK bundles run"},
	{"weir.subtask.bundle.duration", "s", kindCounter, lSubtask, "total duration of the SDK bundles run"},
	// Stages.
	{"weir.stage.watermark", "ms", kindGauge, lStage + ", direction (input, output)", "least watermark over the stage's subtasks"},
	{"weir.stage.watermark.lag", "s", kindGauge, lStage, "now minus the stage's output watermark"},
	{"weir.stage.elements.rate", "{element}/s", kindGauge, lStage + ", direction (in, out)", "elements per second over the last sample's interval"},
	{"weir.stage.state.size", "By", kindGauge, lStage, "the stage's state in the Pebble store (exact for small state, Pebble's estimate past 20,000 records)"},
	{"weir.stage.input.spread", "s", kindGauge, lStage, "distance between the watermarks of a stage's producers, for a stage fed by several"},
	// Sources.
	{"weir.source.watermark", "ms", kindGauge, lPartition, "a Kafka partition's watermark"},
	{"weir.source.watermark.lag", "s", kindGauge, lPartition, "now minus a Kafka partition's watermark"},
	{"messaging.client.consumed.messages", "{message}", kindCounter, lPartition, "records delivered from the partition (OpenTelemetry's messaging convention)"},
	{"weir.kafka.consumer.lag", "{message}", kindGauge, lPartition, "high watermark minus the next offset to read"},
	{"weir.kafka.consumer.lag.time", "s", kindGauge, lPartition, "while lag > 0, now minus the broker timestamp of the last record read; 0 when caught up"},
	{"weir.kafka.partition.paused", "", kindGauge, lPartition, "1 while watermark alignment pauses the partition"},
	{"weir.kafka.partition.idle", "", kindGauge, lPartition, "1 while the partition is idle and left out of the watermark"},
	{"weir.alignment.spread", "s", kindGauge, lJob + ", group", "distance between an alignment group's fastest and slowest split"},
	{"weir.alignment.paused", "{partition}", kindGauge, lJob + ", group", "splits the group's last announcement paused"},
	// Checkpoints.
	{"weir.checkpoint.completed", "{checkpoint}", kindCounter, lJob, "checkpoints completed"},
	{"weir.checkpoint.failed", "{checkpoint}", kindCounter, lJob, "checkpoints failed"},
	{"weir.checkpoint.in_progress", "{checkpoint}", kindGauge, lJob, "1 while a checkpoint is in progress"},
	{"weir.checkpoint.duration", "s", kindGauge, lJob, "trigger to completion of the last completed checkpoint, as Flink's lastCheckpointDuration"},
	{"weir.checkpoint.size", "By", kindGauge, lJob, "bytes the last completed checkpoint wrote, in-flight data included"},
	{"weir.checkpoint.in_flight.size", "By", kindGauge, lJob, "in-flight data of the last completed checkpoint (unaligned subtasks)"},
	{"weir.checkpoint.alignment.duration", "s", kindGauge, lJob, "the longest any subtask aligned barriers in the last completed checkpoint"},
	// Late data.
	{"weir.late.dropped", "{element}", kindCounter, lJob + ", transform, reason (late, closed_window)", "elements dropped as too late or for a closed window"},
	{"weir.arrival.delay", "ms", kindGauge, lJob + ", transform, quantile (0.5, 0.99, 1)", "processing time minus event time of arriving elements"},
	// Workers.
	{"weir.sdk.workers", "{worker}", kindGauge, lJob, "SDK workers the job runs"},
	{"weir.sdk.workers.lost", "{worker}", kindCounter, lJob, "SDK workers lost mid-bundle and replaced"},
	{"weir.bundle.retries", "{bundle}", kindCounter, lJob, "bundles retried after a lost worker"},
	{"weir.job.restarts", "{restart}", kindCounter, lJob, "restarts of the job from its last checkpoint after a failure"},
	// The pipeline's own metrics.
	{"weir.user.counter", "", kindUpDown, lJob + ", namespace, name, transform", "a user counter's committed value"},
	{"weir.user.gauge", "", kindGauge, lJob + ", namespace, name, transform", "a user gauge's latest value"},
	{"weir.user.distribution.count", "", kindUpDown, lJob + ", namespace, name, transform", "a user distribution's count"},
	{"weir.user.distribution.sum", "", kindUpDown, lJob + ", namespace, name, transform", "a user distribution's sum"},
	{"weir.user.distribution.min", "", kindGauge, lJob + ", namespace, name, transform", "a user distribution's minimum"},
	{"weir.user.distribution.max", "", kindGauge, lJob + ", namespace, name, transform", "a user distribution's maximum"},
	// Jobs.
	{"weir.jobs", "{job}", kindGauge, "state", "jobs in the server's registry by state"},
}
