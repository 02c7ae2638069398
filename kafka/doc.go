// Package kafka is weir's runner side of Kafka: the partition-aware reader
// and the writer behind kafkaio's native transforms, and the executor
// operators that run them.
//
// A Reader consumes every partition of the configured topics with one
// franz-go client, from offsets it resolves itself at the start (earliest,
// latest, the group's committed offsets, or the first offset at or after an
// event time in every partition), so it always knows each partition's next
// offset. Per partition it assigns event time by the timestamp policy and
// keeps a watermark (watermarkmgr.Splits: bounded out-of-orderness,
// idleness whose clock stops while the partition is paused). When the
// source names an alignment group, the reader reports its partitions to the
// job's shared group (Groups) and pauses or resumes single partitions as
// the group decides, through kgo's PauseFetchPartitions and
// ResumeFetchPartitions; records kgo had buffered for a paused partition
// are dropped by kgo without moving its offset, so they are fetched again on
// resume and nothing is skipped.
//
// A Writer produces at least once: it produces asynchronously, and Flush
// waits for every record, producing the failed ones again with back-off
// until they are written. The sink operator flushes at every barrier and at
// the end of its input.
//
// Connection and metadata failures (unreachable brokers, a missing topic)
// are retried with back-off for as long as the job runs, each reported
// through OnError with the source or sink and the topic and partition, so
// the job shows why it is not moving instead of failing or skipping.
//
// An exactly-once write is a twophase.Sink (TxnSink) under the shared
// twophase.Driver: records wait in the store until their checkpoint
// completes, then go out in one transaction with the run's marker
// (TxnWriter, Markers).
//
// ReadConnector and WriteConnector (connector.go) are the connectors that
// decode kafkaio's transforms at submission and build these operators.
//
// The reader and writer read processing time from a Clock, so tests of
// idleness, alignment and bounded read times run on a fake one.
package kafka
