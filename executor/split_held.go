package executor

import (
	"encoding/binary"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/weir-runner/weir/fnapi"
)

// Held residuals of checkpoint splits.
//
// A checkpoint is a split that keeps none of the remainder (fraction 0).
// The Go SDK (v2.77) computes the fraction of the current element's
// remainder to split at as frac(index + progress) - progress, scaled, and
// with 0 asked a rounding error makes that slightly negative about half the
// time; the SDK then answers with a channel split whose first residual is
// the element it is processing, and finishes that element anyway. Taken at
// its word, the runner runs the element again in the residual: on Nexmark's
// query 8 over 2M events, a block of events twice.
//
// So the elements a checkpoint's channel split gives up are held until the
// attempt ends, and its final data channel read index (the elements it
// completed, beam:metric:data_channel:read_index:v1 on the source) says
// how many of them it processed after all: those are dropped, the rest go
// on as the split's residual would have. An SDK that keeps its word, or
// counts its read index from the element in progress (Python, Java),
// reports no more than the split point, and nothing is dropped. Held
// residuals wait at most until the attempt ends, which a checkpoint makes
// soon.

// holdChannelResidual holds the n elements the split answered in ev gave
// up, when ev was a checkpoint answered with a channel split alone, and
// reports whether it did.
func (t *sdfTask) holdChannelResidual(ev sdfEvent, n int) bool {
	sr := ev.split
	if ev.fraction != 0 || len(sr.GetPrimaryRoots()) > 0 || len(sr.GetResidualRoots()) > 0 || n == 0 {
		return false
	}
	t.heldEnd = max(t.heldEnd, t.end+n)
	return true
}

// releaseHeld sends on what the attempt's checkpoints held, less the
// elements its source read past the split (processed is its final read
// index; -1 when unknown or when the attempt's work is void), as the
// split's residual: to be truncated while the stage drains, else run.
func (r *sdfRun) releaseHeld(t *sdfTask, processed int64) {
	if t.heldEnd <= t.end {
		return
	}
	from := t.end
	if processed > int64(from) {
		from = int(min(processed, int64(t.heldEnd)))
	}
	rest := t.in[from:t.heldEnd]
	t.heldEnd = 0
	if len(rest) == 0 {
		return
	}
	if t.drainSplit {
		r.s.pending = append(r.s.pending, rest...)
		r.s.resHold = mtime.MinTimestamp
		return
	}
	r.queue = append(r.queue, newSDFTask(rest))
}

// readIndex returns the final data channel read index the SDK reported for
// the bundle's source transform, or -1.
func readIndex(res *fnapi.BundleResult, source string) int64 {
	if res == nil {
		return -1
	}
	return readIndexOf(res.Response, source)
}

func readIndexOf(resp *fnpb.ProcessBundleResponse, source string) int64 {
	for _, mi := range resp.GetMonitoringInfos() {
		if mi.GetUrn() != "beam:metric:data_channel:read_index:v1" || mi.GetLabels()["PTRANSFORM"] != source {
			continue
		}
		// A sum_int64 payload: Beam's varint, the uvarint of the bits.
		if v, n := binary.Uvarint(mi.GetPayload()); n > 0 {
			return int64(v)
		}
	}
	return -1
}
