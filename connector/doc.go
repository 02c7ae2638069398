// Package connector is the seam between weir's core and its runner-native
// transforms: the sources and sinks weir runs itself rather than in an
// SDK (Kafka read and write, file write, TestStream). A connector is one
// package; the runner lists it in one line (runner/connectors.go).
//
// A connector says, in three steps, everything the core needs:
//
//  1. At submission, translate finds a leaf transform whose URN a
//     Connector in the Registry claims, and calls Decode once with a view
//     of the transform (Transform): the connector checks its payload,
//     inputs, outputs and their coders, and returns a decoded Config, or
//     every error it found (translate names the transform and URN).
//  2. The Config's Placement says how the stage runs: its parallelism,
//     whether its inputs are partitioned by key, whether its subtasks keep
//     state in the job's store (which checkpoints then export), whether the
//     whole job must run one subtask per stage. The plan's stage carries
//     the Config, opaque to translate and the runner.
//  3. When the job runs, the runner calls the Config's Build with what a
//     node needs (BuildContext: input codecs, the store, the job's clock of
//     checkpoints, its warnings and metrics, values shared between the
//     job's stages), and runs the operator or source it returns. The
//     runner records the arrival delay of every source's output, so a
//     source cannot forget it.
//
// An exactly-once sink implements twophase.Sink and returns a
// twophase.Driver as its operator: the driver owns epochs, commits,
// retries and recovery. connector/conformance is the suite every source
// and sink passes. docs/connectors.md says how to write one.
//
// Optional capabilities are found by type assertion: a Connector that
// implements OutputCoder has its output re-encoded by the SDK when it
// differs from the output PCollection's coder; one that implements Paths
// has its transforms' paths checked against the folders a confined server
// allows; a Config that implements Parallel takes the job's source
// parallelism when its own configuration sets none.
package connector
