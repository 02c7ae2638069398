package kafka

import (
	"fmt"
	"hash/fnv"
)

// Assignment says which share of a read's partitions one reader takes: a
// read runs as Of subtasks and this reader is subtask Index. The zero
// value is a read of one subtask, which takes every partition.
type Assignment struct {
	Index, Of int
}

// Owns reports whether the reader reads partition p of topic.
func (a Assignment) Owns(topic string, p int32) bool {
	return a.Of <= 1 || Owner(topic, p, a.Of) == a.Index
}

// Validate checks that the index is one of the subtasks.
func (a Assignment) Validate() error {
	if a.Of > 1 && (a.Index < 0 || a.Index >= a.Of) {
		return fmt.Errorf("subtask %d of %d", a.Index, a.Of)
	}
	return nil
}

// Owner returns the subtask, of n, that reads partition p of topic:
// partitions of a topic go round robin over the subtasks from a start
// that depends on the topic alone, as Flink's Kafka source assigns them
// (KafkaSourceEnumerator.getSplitOwner). So a topic's partitions spread
// evenly, several topics do not all start at subtask 0, and a partition
// keeps its subtask when partitions are added: a checkpoint's positions
// stay with the subtask that restores them. A changed number of subtasks
// moves partitions; a job restored at another parallelism is refused
// before it gets here (checkpoint.CheckGraph), and a restored reader
// refuses a position holding a partition it does not own
// (Reader.resume).
//
// The topic's start is FNV-1a of its name: the same in every process
// and release, as the assignment must be.
func Owner(topic string, p int32, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(topic))
	start := int(h.Sum32() % uint32(n))
	return (start + int(p)%n) % n
}
