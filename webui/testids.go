package webui

// The data-testid attributes of the page, for tests that drive it in a
// browser (package webui/uitest). They are part of the UI's contract: rename
// one only with its tests. Select one with
// [data-testid="job-row"][data-job-id="..."]; uitest.TestID builds that.
//
// Rows of the job page's tables also carry data-col on each cell, naming the
// jobview JSON field it shows (for example data-col="outputWatermark" in a
// subtask-row), so a test can read one figure without counting columns.
//
// TestTestIDs checks that each of these is in the page's source, and the
// browser test that every data-testid the page renders is one of these.
const (
	// Every page.
	TestIDNavJobs    = "nav-jobs"    // the brand link back to the job list
	TestIDPollStatus = "poll-status" // "live · 12:00:05", or why polling failed or stopped

	// The job list (#/).
	TestIDJobList   = "job-list"   // the list's container
	TestIDJobRow    = "job-row"    // one job; data-job-id is its ID
	TestIDJobLink   = "job-link"   // in a job-row: the link to the job's page
	TestIDJobName   = "job-name"   // in a job-row, and the job page's title
	TestIDJobState  = "job-state"  // in a job-row, and the job page's header: the Beam state name
	TestIDJobError  = "job-error"  // in a job-row, and the job page's error box
	TestIDJobsEmpty = "jobs-empty" // shown instead of rows when there are no jobs

	// The job page's header (#/jobs/<id>).
	TestIDBackToJobs   = "back-to-jobs"
	TestIDJobID        = "job-id"
	TestIDJobMeta      = "job-meta"     // ID, start, duration, sample time
	TestIDJobDuration  = "job-duration" // Summary.Seconds, formatted
	TestIDJobNotFound  = "job-not-found"
	TestIDBtnCancel    = "btn-cancel" // disabled unless the job can be cancelled
	TestIDBtnDrain     = "btn-drain"  // disabled unless RUNNING
	TestIDBtnSavepoint = "btn-savepoint"
	// TestIDActionResult shows the last action's outcome; data-outcome is
	// "pending", "ok" or "error".
	TestIDActionResult       = "action-result"
	TestIDJobSummary         = "job-summary" // the row of figure cards below the header
	TestIDSummaryStages      = "summary-stages"
	TestIDSummarySubtasks    = "summary-subtasks"
	TestIDSummaryWatermark   = "summary-watermark" // the minimum output watermark of the sink stages
	TestIDSummaryWorkers     = "summary-workers"
	TestIDSummaryCheckpoints = "summary-checkpoints"
	TestIDSummaryLate        = "summary-late"

	// The stage graph: an SVG with one stage-node per stage and one
	// stage-edge per edge.
	TestIDStageGraphSection = "stage-graph-section"
	TestIDStageGraph        = "stage-graph" // the <svg>
	// TestIDStageNode is a stage's box (an SVG <g>); data-stage-name and
	// data-stage-index identify it. Clicking it filters the subtask table.
	TestIDStageNode        = "stage-node"
	TestIDStageName        = "stage-name"        // in a stage-node; long names are cut with …
	TestIDStageKind        = "stage-kind"        // in a stage-node
	TestIDStageParallelism = "stage-parallelism" // in a stage-node: "×4"
	TestIDStageRate        = "stage-rate"        // in a stage-node: "out 1.2k/s"
	TestIDStageRateIn      = "stage-rate-in"     // in a stage-node: "in 1.2k/s"
	// TestIDStageWatermark is the output watermark in a stage-node: a UTC
	// time, "−∞" (U+2212) before the first, "+∞" once the input ended.
	TestIDStageWatermark = "stage-watermark"
	TestIDStageLag       = "stage-lag"    // in a stage-node: "lag 2.1 s"
	TestIDStageRatios    = "stage-ratios" // in a stage-node: "busy 40% · bp 0%"
	TestIDStageEdge      = "stage-edge"   // data-from, data-to: stage indexes

	// The tables. Each *-row is a <tr>.
	TestIDSubtasks    = "subtasks"     // the subtask section's body
	TestIDStageFilter = "stage-filter" // the chip that clears a stage filter
	// TestIDSubtaskRow: data-stage-name, data-subtask (the index).
	TestIDSubtaskRow = "subtask-row"
	TestIDPartitions = "partitions"
	// TestIDPartitionRow: data-topic, data-partition.
	TestIDPartitionRow = "partition-row"
	TestIDAlignment    = "alignment"
	TestIDAlignmentRow = "alignment-row" // data-group
	TestIDCheckpoints  = "checkpoints"
	// TestIDCheckpointSummary: "N completed · M failed", or that
	// checkpointing is off.
	TestIDCheckpointSummary = "checkpoint-summary"
	// TestIDCheckpointRow: data-checkpoint-id, data-status.
	TestIDCheckpointRow = "checkpoint-row"
	// TestIDCheckpointToggle, in a checkpoint-row, shows or hides its
	// checkpoint-details (aria-expanded says which); the choice survives
	// refreshes.
	TestIDCheckpointToggle     = "checkpoint-toggle"
	TestIDCheckpointDetails    = "checkpoint-details"     // data-checkpoint-id
	TestIDCheckpointSubtaskRow = "checkpoint-subtask-row" // data-stage-name, data-subtask
	TestIDLate                 = "late"
	TestIDLateRow              = "late-row" // data-transform
	TestIDWorkersSection       = "workers-section"
	TestIDWorkers              = "workers" // cards with data-col running, lost, bundleRetries
	TestIDUserMetrics          = "user-metrics"
	TestIDUserMetricRow        = "user-metric-row" // data-namespace, data-name
	TestIDMessagesSection      = "messages-section"
	TestIDMessages             = "messages"    // the scrolling list, newest last, at most 200
	TestIDMessageRow           = "message-row" // class imp-<Importance>
)
