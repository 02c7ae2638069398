package joboptions

import "time"

// The names of weir's job options.
const (
	DeadLetter         = "weir_dead_letter"
	CombineLifting     = "weir_combine_lifting"
	AdaptivePrecombine = "weir_adaptive_precombine"
	AdaptiveUnlift     = "weir_adaptive_unlift"
	InputSpreadWarning = "weir_input_spread_warning"
	InlineGroupBytes   = "weir_inline_group_bytes"
	SourceParallelism  = "weir_source_parallelism"

	MaxBundleElements  = "weir_max_bundle_elements"
	MaxBundleBytes     = "weir_max_bundle_bytes"
	MaxBundleTime      = "weir_max_bundle_time"
	StreamBundleOutput = "weir_stream_bundle_output"

	CheckpointInterval          = "weir_checkpoint_interval"
	CheckpointDir               = "weir_checkpoint_dir"
	CheckpointMode              = "weir_checkpoint_mode"
	CheckpointAlignedTimeout    = "weir_checkpoint_aligned_timeout"
	CheckpointTimeout           = "weir_checkpoint_timeout"
	CheckpointTolerableFailures = "weir_checkpoint_tolerable_failures"
	CheckpointKeep              = "weir_checkpoint_keep"
	Restore                     = "weir_restore"

	RestartAttempts = "weir_restart_attempts"
	RestartDelay    = "weir_restart_delay"

	Savepoint                  = "weir_savepoint"
	SavepointRename            = "weir_savepoint_rename"
	SavepointAllowDroppedState = "weir_savepoint_allow_dropped_state"

	HTTPAddr = "weir_http_addr"
)

// The values of StreamBundleOutput.
const (
	StreamAuto = "auto"
	StreamOn   = "on"
	StreamOff  = "off"
)

// The checkpoint modes, as checkpoint.ParseMode reads them.
const (
	ModeAligned        = "aligned"
	ModeUnaligned      = "unaligned"
	ModeAlignedTimeout = "aligned-timeout"
)

// Checks beyond an option's kind.
func positive(v any) string {
	switch v := v.(type) {
	case int:
		if v <= 0 {
			return "want a positive whole number"
		}
	case time.Duration:
		if v <= 0 {
			return "want a positive duration such as 10s"
		}
	}
	return ""
}

func nonNegative(v any) string {
	switch v := v.(type) {
	case int:
		if v < 0 {
			return "want a whole number, 0 or more"
		}
	case time.Duration:
		if v < 0 {
			return "want a duration such as 10m, or 0"
		}
	}
	return ""
}

// declared is every job option. The docs (docs/options.md) list them in
// this order; a test keeps the two in step.
var declared = []Option{
	// Late data.
	{Name: DeadLetter, Kind: Path, Group: "late data",
		Usage: "append elements dropped as too late to this JSON-lines file", Unset: "none: late data is counted only",
		field: func(o *Options) any { return &o.DeadLetter }},

	// Plans: combines and groups.
	{Name: CombineLifting, Kind: Bool, Group: "plan", Default: "true",
		// Lifting (precombine before the shuffle) pays when keys repeat; on
		// near-unique keys the SDK encodes and decodes an accumulator per
		// element for nothing (docs/benchmarks.md measures it).
		Usage: "run combines lifted (precombine before the shuffle); false runs them on grouped values",
		field: func(o *Options) any { return &o.CombineLifting }},
	{Name: AdaptivePrecombine, Kind: Bool, Group: "plan", Default: "true",
		// executor/liftswitch.go: a stage whose precombines do not reduce
		// converts each input to an accumulator alone, and probes now and
		// then whether that is still so.
		Usage: "convert inputs to accumulators one by one where a combine's precombine does not reduce them; false always precombines",
		field: func(o *Options) any { return &o.AdaptivePrecombine }},
	{Name: AdaptiveUnlift, Kind: Bool, Group: "plan", Default: "true",
		Usage: "run a lifted combine unlifted when its first bundle finds keys that do not repeat; false keeps it lifted",
		field: func(o *Options) any { return &o.AdaptiveUnlift }},
	{Name: InlineGroupBytes, Kind: Int, Group: "plan", Default: "4194304",
		Usage: "bytes of a group's values sent to the SDK inline; the rest is read from the runner's store (0: the default, 4 MiB; negative: always whole)",
		field: func(o *Options) any { return &o.InlineGroupBytes }},
	// Beam's Flink runner reads a Kafka topic with --parallelism
	// subtasks; a Kafka read's own `parallelism` has no Python or Java
	// spelling (docs/kafka.md, Parallelism).
	{Name: SourceParallelism, Kind: Int, Group: "plan", Unset: "each source's own: 1 for a Kafka read", check: positive,
		Usage: "subtasks of every source that reads its input in shares (a Kafka read's partitions) and whose configuration sets no parallelism",
		field: func(o *Options) any { return &o.SourceParallelism }},
	{Name: InputSpreadWarning, Kind: Duration, Group: "plan", Default: "10m", check: nonNegative,
		Usage: "warn when the inputs of a join or flatten are this far apart in event time (0: never)",
		field: func(o *Options) any { return &o.InputSpreadWarning }},

	// Bundles, as the Flink runner's --maxBundleSize and
	// --maxBundleTimeMills (docs/decisions.md, "bundle sizes").
	{Name: MaxBundleElements, Kind: Int, Group: "bundles", Unset: "65536", check: positive,
		Usage: "elements of input that close a bundle",
		field: func(o *Options) any { return &o.MaxBundleElements }},
	{Name: MaxBundleBytes, Kind: Int, Group: "bundles", Unset: "16 MiB", check: positive,
		Usage: "bytes of input that close a bundle",
		field: func(o *Options) any { return &o.MaxBundleBytes }},
	{Name: MaxBundleTime, Kind: Duration, Group: "bundles", Unset: "1s", check: positive,
		Usage: "how long after its first element a bundle closes if nothing else closed it",
		field: func(o *Options) any { return &o.MaxBundleTime }},
	// docs/decisions.md, "streamed bundle output".
	{Name: StreamBundleOutput, Kind: Enum, Group: "bundles", Default: StreamAuto, Values: []string{StreamAuto, StreamOn, StreamOff},
		Usage: "on: a bundle's output goes downstream as the SDK sends it; off: when the bundle ends; auto: on for jobs that take checkpoints (a worker lost after output left restarts the job from one), off for the rest",
		field: func(o *Options) any { return &o.StreamBundleOutput }},

	// Checkpoints (docs/checkpoints.md).
	{Name: CheckpointInterval, Kind: Duration, Group: "checkpoints", Unset: "off: no checkpoints", check: positive,
		Usage: "take a checkpoint this often (e.g. 10s)",
		field: func(o *Options) any { return &o.CheckpointInterval }},
	{Name: CheckpointDir, Kind: Path, Group: "checkpoints", Unset: "<state dir>/jobs/<job name>/checkpoints",
		Usage: "the checkpoint folder",
		field: func(o *Options) any { return &o.CheckpointDir }},
	{Name: CheckpointMode, Kind: Enum, Group: "checkpoints", Default: ModeAligned,
		Values: []string{ModeAligned, ModeUnaligned, ModeAlignedTimeout},
		Usage:  "aligned, unaligned, or aligned-timeout (aligned until --weir_checkpoint_aligned_timeout)",
		field:  func(o *Options) any { return &o.CheckpointMode }},
	{Name: CheckpointAlignedTimeout, Kind: Duration, Group: "checkpoints", check: positive,
		Usage: "with aligned-timeout, go unaligned this long after the trigger (required there)",
		field: func(o *Options) any { return &o.CheckpointAlignedTimeout }},
	{Name: CheckpointTimeout, Kind: Duration, Group: "checkpoints", Unset: "10m", check: positive,
		Usage: "expire a checkpoint not complete this long after its trigger",
		field: func(o *Options) any { return &o.CheckpointTimeout }},
	{Name: CheckpointTolerableFailures, Kind: Int, Group: "checkpoints", Default: "0", check: nonNegative,
		Usage: "checkpoint failures in a row the job survives; one more fails it",
		field: func(o *Options) any { return &o.CheckpointTolerableFailures }},
	{Name: CheckpointKeep, Kind: Int, Group: "checkpoints", Unset: "3", check: nonNegative,
		Usage: "completed checkpoints kept (0: the default)",
		field: func(o *Options) any { return &o.CheckpointKeep }},
	{Name: Restore, Kind: Bool, Group: "checkpoints", Default: "true",
		Usage: "resume from the newest checkpoint in the checkpoint folder; false starts over",
		field: func(o *Options) any { return &o.Restore }},

	// Restarts (docs/checkpoints.md, Restarts): Flink's fixed-delay
	// restart strategy, its count reset by a completed checkpoint.
	{Name: RestartAttempts, Kind: Int, Group: "restarts", Default: "3", check: nonNegative,
		Usage: "restarts from the last checkpoint after the job fails, in a row without a checkpoint completing between them; 0 fails it at once (needs --weir_checkpoint_interval)",
		field: func(o *Options) any { return &o.RestartAttempts }},
	{Name: RestartDelay, Kind: Duration, Group: "restarts", Default: "1s", check: nonNegative,
		Usage: "wait this long before each restart (needs --weir_checkpoint_interval)",
		field: func(o *Options) any { return &o.RestartDelay }},

	// Savepoints (docs/checkpoints.md, Savepoints).
	{Name: Savepoint, Kind: Path, Group: "savepoints",
		Usage: "start from the savepoint in this folder (needs --weir_checkpoint_interval)",
		field: func(o *Options) any { return &o.Savepoint }},
	{Name: SavepointRename, Kind: Mapping, Group: "savepoints",
		Usage: "transforms renamed since the savepoint, as old=new,old2=new2",
		field: func(o *Options) any { return &o.SavepointRename }},
	{Name: SavepointAllowDroppedState, Kind: Bool, Group: "savepoints", Default: "false",
		Usage: "drop savepoint state no transform of the job takes, instead of refusing the savepoint",
		field: func(o *Options) any { return &o.SavepointAllowDroppedState }},

	// Observability (docs/metrics.md, docs/ui.md).
	{Name: HTTPAddr, Kind: String, Group: "observability",
		Usage: "in-process runner (--runner=weir) only: serve /metrics and the web UI on this address, e.g. localhost:8081; weir serve has --http-addr and ignores it",
		field: func(o *Options) any { return &o.HTTPAddr }},
}
