package runner

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/translate"
)

// testStreamSource builds the source of a TestStream stage. Its synthetic
// processing time starts at the wall-clock time the job's graph is built,
// as Prism's does, so that processing-time timers an SDK sets from its own
// clock fall within the TestStream's advances.
func testStreamSource(s *translate.Stage) *executor.TestStream {
	src := &executor.TestStream{Start: mtime.Now()}
	for _, ev := range s.TestStream.Events {
		e := executor.TestStreamEvent{Watermark: ev.Watermark, AdvanceMillis: ev.AdvanceMillis, ToInfinity: ev.ToInfinity}
		switch ev.Kind {
		case translate.TestStreamElements:
			e.Kind = executor.TestStreamElements
		case translate.TestStreamWatermark:
			e.Kind = executor.TestStreamWatermark
		case translate.TestStreamProcessingTime:
			e.Kind = executor.TestStreamProcessingTime
		}
		for _, el := range ev.Elements {
			e.Elements = append(e.Elements, executor.TestStreamElement{Timestamp: el.Timestamp, Value: el.Value})
		}
		src.Events = append(src.Events, e)
	}
	return src
}
