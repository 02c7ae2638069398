// Package runner owns the life of a job: Beam's JobService, artifact
// staging, the registry of jobs and their states, and the in-process
// `--runner=weir` entry point.
//
// # Submission
//
// An SDK drives a Server through Beam's job API in three calls:
//
//  1. Prepare stores the pipeline and options under a new preparation ID
//     (which later becomes the job ID) and returns a staging token and the
//     artifact staging endpoint (the same gRPC server).
//  2. The SDK opens ReverseArtifactRetrievalService with that token. The
//     server asks it to resolve, then send, every dependency of every
//     environment, writes them under the job's staging directory and records
//     them as FILE artifacts (Job.StagingDir, Job.Artifacts). Names that would
//     leave the staging directory are refused.
//  3. Run waits for staging to finish, creates the Job in state STARTING and
//     hands it to a goroutine owned by the server.
//
// # The job loop
//
// For each job the server's goroutine does, in order:
//
//	RUNNING; err := Executor.Execute(jobCtx, job)
//	err == nil                 -> DONE
//	err != nil after Cancel    -> CANCELLED
//	err != nil otherwise       -> FAILED (job.Fail records the error as a message)
//
// then removes the staged artifacts. The executor never sets the state
// itself; it reports through job.Logf, job.Warn and job.Metrics. A panic
// in the executor fails its job instead of crashing the server.
//
// Every state change is also a record of the job's Logger (the server's,
// with the job's ID and name), and Warn writes a warning both as a job
// message and as a record naming the stage and subtask (joblog.go).
//
// A job that has been terminal for longer than ServerOptions.JobRetention
// is forgotten at the next lookup of the registry (retention.go).
//
// Cancel moves a job to CANCELLING and cancels jobCtx; the job becomes
// CANCELLED when Execute returns. GetStateStream and GetMessageStream follow
// Job.Updates until the job is terminal, then end the stream.
//
// # Shutdown
//
// Stop(ctx) follows http.Server.Shutdown: refuse new preparations and runs,
// cancel every running job, wait for the job goroutines, then stop gRPC
// gracefully; whatever is still running when ctx ends is cut off.
//
// # Workers
//
// NewArtifactRetrieval serves a job's staged artifacts to its SDK workers
// (the Fn API side registers it); it only reads FILE artifacts inside the
// job's staging directory.
//
// # In-process
//
// A blank import of this package registers the Beam Go SDK runner "weir":
// it starts one Server per process on a free localhost port and submits
// through the universal runner with a LOOPBACK environment.
// With --endpoint it submits to that server instead; if the WEIR_TLS* or
// WEIR_TOKEN* environment variables are set (package secure), through a
// proxy in this process (package proxy), since the universal runner dials
// in plaintext without a token.
//
// # Access
//
// ServerOptions.Access and HTTPOptions.Access (a *secure.Policy) are the
// TLS, client certificates and token the job service and the HTTP side
// require; their checks run before any handler. Nil requires nothing, as
// the in-process server, which listens on loopback only.
package runner
