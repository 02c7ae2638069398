package executor

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/watermarkmgr"
)

// Kind says what a Message carries.
type Kind uint8

// Message kinds.
const (
	KindData Kind = iota
	KindWatermark
	KindBarrier
	KindEnd
	// KindProcessingTime carries a synthetic processing time in Watermark.
	// Only jobs whose clock is driven by a TestStream send it; elsewhere
	// operators read the wall clock.
	KindProcessingTime
	// KindStatus carries the producer's watermark status in Status:
	// idle, its channel leaves the consumer's minimum until it says
	// active again (watermarkmgr.Status, Flink's WatermarkStatus). An
	// idle producer sends no watermark (Output).
	KindStatus
)

// BarrierID numbers checkpoints; it only grows within a job.
type BarrierID uint64

// Message is what travels on a channel.
type Message struct {
	Kind      Kind
	Elems     [][]byte // KindData: encoded elements
	Watermark mtime.Time
	Barrier   BarrierID
	Status    watermarkmgr.Status // KindStatus
	// pos is, for a barrier on a priority lane, how many messages its
	// producer had sent on the channel before it (see inbox).
	pos uint64
}

type envelope struct {
	ch  int // channel index at the receiver
	msg Message
}
