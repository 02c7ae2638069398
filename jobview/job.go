package jobview

import "time"

// Watermarks are milliseconds since the Unix epoch, as Beam's event times.
// A watermark at or below MinWatermark is the start of time (nothing is
// known yet); one at or above MaxWatermark is the end of time (the input
// ended).
const (
	MinWatermark int64 = -9223372036854775 // Beam's mtime.MinTimestamp
	MaxWatermark int64 = 9223372036854775  // Beam's mtime.MaxTimestamp
)

// Summary is a job as the job list shows it.
type Summary struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"` // Beam's JobState name: RUNNING, DONE, DRAINED, …
	// Start is when the job was submitted; End when it reached a terminal
	// state (zero while it runs).
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Seconds is End (or now) minus Start.
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
	// Restarts counts the job's restarts from a checkpoint after a
	// failure.
	Restarts int64 `json:"restarts"`
}

// Job is one sample of a job.
type Job struct {
	Summary
	// SampledAt is when the figures were read; Interval the time since the
	// sample before, over which rates and ratios are taken (zero in the
	// first sample).
	SampledAt time.Time     `json:"sampledAt"`
	Interval  time.Duration `json:"intervalNanos"`

	Stages      []Stage      `json:"stages"`
	Edges       []Edge       `json:"edges"`
	Partitions  []Partition  `json:"partitions"`
	Alignment   []Alignment  `json:"alignment"`
	Checkpoints Checkpoints  `json:"checkpoints"`
	Late        []Late       `json:"late"`
	Workers     Workers      `json:"workers"`
	User        []UserMetric `json:"user"`
	Messages    []Message    `json:"messages"`
}

// Stage is one fused stage of the executor graph: Parallelism subtasks of
// one operator. Its figures are over its subtasks: counts add, the input
// and output watermarks are the minimum, the ratios are the maximum over
// subtasks (the most backpressured subtask gives a stage its colour, as in
// Flink's UI).
type Stage struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	Kind        string `json:"kind"` // "source", "sdk", "gbk", "sink", …
	Parallelism int    `json:"parallelism"`

	Counts
	Rates
	Ratios
	InputWatermark  int64 `json:"inputWatermark"`
	OutputWatermark int64 `json:"outputWatermark"`
	// WatermarkLag is SampledAt minus OutputWatermark, in seconds; zero
	// while the watermark is at the start or the end of time.
	WatermarkLag float64 `json:"watermarkLagSeconds"`
	// StateBytes estimates the stage's state in the store; -1 if not known.
	StateBytes int64     `json:"stateBytes"`
	Subtasks   []Subtask `json:"subtasks"`
}

// Subtask is one parallel instance of a stage.
type Subtask struct {
	Index int `json:"index"`
	Counts
	Rates
	Ratios
	InputWatermark  int64   `json:"inputWatermark"`
	OutputWatermark int64   `json:"outputWatermark"`
	WatermarkLag    float64 `json:"watermarkLagSeconds"`
	// QueueDepth is the number of messages waiting in the subtask's input
	// queue, of QueueCapacity.
	QueueDepth    int `json:"queueDepth"`
	QueueCapacity int `json:"queueCapacity"`
	// WatermarkIdle says the subtask told its consumers it is idle (every input,
	// or every Kafka partition it owns, idle, or none owned): its
	// watermark holds none of them back.
	WatermarkIdle bool `json:"watermarkIdle,omitempty"`
	// LateInput counts elements that came behind the subtask's input
	// watermark from an input back from idleness.
	LateInput int64 `json:"lateInput,omitempty"`
}

// Counts are cumulative totals since the job started.
type Counts struct {
	ElementsIn  int64 `json:"elementsIn"`
	ElementsOut int64 `json:"elementsOut"`
	BytesIn     int64 `json:"bytesIn"`
	BytesOut    int64 `json:"bytesOut"`
	// Bundles is the number of SDK bundles run; BundleSeconds their total
	// duration. Zero for stages that run no SDK code.
	Bundles       int64   `json:"bundles"`
	BundleSeconds float64 `json:"bundleSeconds"`
	// Cumulative time busy, idle (waiting for input) and backpressured
	// (waiting for room downstream), in seconds.
	BusySeconds          float64 `json:"busySeconds"`
	IdleSeconds          float64 `json:"idleSeconds"`
	BackpressuredSeconds float64 `json:"backpressuredSeconds"`
}

// Rates are per second over the sample's interval.
type Rates struct {
	ElementsInPerSecond  float64 `json:"elementsInPerSecond"`
	ElementsOutPerSecond float64 `json:"elementsOutPerSecond"`
	BytesInPerSecond     float64 `json:"bytesInPerSecond"`
	BytesOutPerSecond    float64 `json:"bytesOutPerSecond"`
}

// Ratios are shares of the sample's interval, each in [0, 1], as Flink
// reports them: busy + idle + backpressured = 1.
type Ratios struct {
	Busy          float64 `json:"busyRatio"`
	Idle          float64 `json:"idleRatio"`
	Backpressured float64 `json:"backpressuredRatio"`
}

// Edge is a connection from one stage's output to another stage's input.
type Edge struct {
	From      int    `json:"from"` // Stage.Index
	To        int    `json:"to"`
	Partition string `json:"partition"` // "forward", "hash", "broadcast"
}

// Partition is one Kafka partition a source reads.
type Partition struct {
	Source    string `json:"source"` // the source stage's name
	Subtask   int    `json:"subtask"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Watermark int64  `json:"watermark"`
	// Next is the next offset to read. Lag is the high watermark minus
	// Next in records, -1 before the broker told the high watermark;
	// LagSeconds is how old the newest record read is while Lag > 0, else 0.
	Next       int64   `json:"next"`
	Consumed   int64   `json:"consumed"` // records delivered from the partition
	Lag        int64   `json:"lag"`
	LagSeconds float64 `json:"lagSeconds"`
	Paused     bool    `json:"paused"` // by watermark alignment
	Idle       bool    `json:"idle"`
}

// Alignment is one watermark alignment group's last announcement.
type Alignment struct {
	Group string `json:"group"`
	// Bound is the watermark no split may pass (MaxWatermark: none held
	// back); Spread the distance between the group's fastest and slowest
	// split in seconds; Paused the splits paused now.
	Bound  int64   `json:"bound"`
	Spread float64 `json:"spreadSeconds"`
	Paused int     `json:"paused"`
}

// Checkpoints is the job's checkpoint statistics.
type Checkpoints struct {
	Enabled    bool         `json:"enabled"`
	Completed  int          `json:"completed"`
	Failed     int          `json:"failed"`
	InProgress bool         `json:"inProgress"`
	History    []Checkpoint `json:"history"` // newest first, bounded
}

// Checkpoint is one checkpoint or savepoint.
type Checkpoint struct {
	ID        int64     `json:"id"`
	Status    string    `json:"status"` // "in progress", "completed", "failed"
	Savepoint bool      `json:"savepoint"`
	Trigger   time.Time `json:"trigger"`
	Seconds   float64   `json:"seconds"`
	Bytes     int64     `json:"bytes"`
	InFlight  int64     `json:"inFlightBytes"`
	// AlignmentSeconds is the longest any subtask waited for its barriers.
	AlignmentSeconds float64             `json:"alignmentSeconds"`
	Unaligned        int                 `json:"unalignedSubtasks"`
	Failure          string              `json:"failure,omitempty"`
	Subtasks         []CheckpointSubtask `json:"subtasks"`
}

// CheckpointSubtask is one subtask's part of a checkpoint.
type CheckpointSubtask struct {
	Stage             string  `json:"stage"`
	Subtask           int     `json:"subtask"`
	Acknowledged      bool    `json:"acknowledged"`
	StartDelaySeconds float64 `json:"startDelaySeconds"`
	AlignmentSeconds  float64 `json:"alignmentSeconds"`
	SyncSeconds       float64 `json:"syncSeconds"`
	AsyncSeconds      float64 `json:"asyncSeconds"`
	Bytes             int64   `json:"bytes"`
	InFlight          int64   `json:"inFlightBytes"`
	Unaligned         bool    `json:"unaligned"`
}

// Late is a transform's account of late data.
type Late struct {
	Transform     string `json:"transform"`
	Source        bool   `json:"source"` // a source only records arrivals
	DroppedLate   int64  `json:"droppedLate"`
	DroppedClosed int64  `json:"droppedClosed"`
	// Arrival delays (processing time minus event time) in milliseconds;
	// Arrivals is how many were observed.
	Arrivals   int64 `json:"arrivals"`
	ArrivalP50 int64 `json:"arrivalP50Millis"`
	ArrivalP99 int64 `json:"arrivalP99Millis"`
	ArrivalMax int64 `json:"arrivalMaxMillis"`
	// InputSpread is, for a stage fed by several, the distance between
	// its inputs' watermarks in seconds.
	InputSpread float64 `json:"inputSpreadSeconds"`
}

// Workers is the job's SDK workers.
type Workers struct {
	Running       int   `json:"running"`
	Lost          int64 `json:"lost"`
	BundleRetries int64 `json:"bundleRetries"`
}

// UserMetric is one of the pipeline's own metrics, as the SDK reports it.
type UserMetric struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
	Kind      string `json:"kind"` // "counter", "distribution", "gauge"
	// Value is a counter's or gauge's value; a distribution has Count,
	// Sum, Min and Max.
	Value float64 `json:"value"`
	Count int64   `json:"count,omitempty"`
	Sum   float64 `json:"sum,omitempty"`
	Min   float64 `json:"min,omitempty"`
	Max   float64 `json:"max,omitempty"`
}

// Message is one job message.
type Message struct {
	Time       time.Time `json:"time"`
	Importance string    `json:"importance"` // DEBUG, DETAILED, BASIC, WARNING, ERROR
	Text       string    `json:"text"`
}
