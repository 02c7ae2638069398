// Package benchproc holds what weir's benchmark programs (pipelines/loadbench,
// pipelines/overheadbench, the streaming bench) share about the processes
// they measure and the page they write: a job server's CPU time and peak
// resident set read from /proc, waiting for its port, medians, and the
// sections of docs/benchmarks.md that each benchmark rewrites while keeping
// the others'.
//
// The readings are Linux's: /proc/<pid>/stat for user and system time,
// /proc/<pid>/status for VmHWM. A benchmark reads them from the job server's
// pid while it lives, so that the SDK worker (LOOPBACK, in the client) is
// never counted as the runner's.
package benchproc
