package runner

import (
	"sync"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/metrics"
	"github.com/weir-runner/weir/state"
	"github.com/weir-runner/weir/translate"
)

// InlineGroupOption bounds the bytes of a group's values sent to the SDK
// inline; past it, the rest stays in the store and the SDK reads it in
// pages (a state-backed iterable). A negative value sends every group
// whole.

// defaultInlineGroup is the inline bound without the option: large enough
// that ordinary groups go whole, small next to a worker's memory.
const defaultInlineGroup = 4 << 20

// Metrics of the groups held in the store, per group-by-key transform.
const (
	MetricHeldGroups = "state_backed_groups"      // groups sent as state-backed iterables
	MetricHeldPages  = "state_backed_group_pages" // pages of them SDKs read
)

func inlineGroupBytes(j *Job) (int, error) {
	opts, err := j.JobOptions()
	if err != nil {
		return 0, err
	}
	if opts.InlineGroupBytes == 0 {
		return defaultInlineGroup, nil
	}
	return opts.InlineGroupBytes, nil
}

// heldGroups configures the shuffles of group-by-keys whose output may be
// held, and reports what they held as job metrics.
type heldGroups struct {
	above int // inline bytes; <= 0 holds nothing
	store executor.HeldStore

	mu       sync.Mutex
	shuffles map[string][]*state.Shuffle // by group-by-key transform
}

func newHeldGroups(j *Job, store *state.Store) (*heldGroups, error) {
	above, err := inlineGroupBytes(j)
	if err != nil {
		return nil, err
	}
	h := &heldGroups{above: above, store: store, shuffles: map[string][]*state.Shuffle{}}
	if testHookHeld != nil {
		h.store = testHookHeld(h.store)
	}
	j.Metrics.AddSource(h.MonitoringInfos)
	return h, nil
}

// testHookHeld, if set, wraps the store SDK stages read held groups from.
var testHookHeld func(executor.HeldStore) executor.HeldStore

// shuffle sets sh up to hold the large groups of GBK stage s, if its
// output may be held.
func (h *heldGroups) shuffle(plan *translate.Plan, s *translate.Stage, sh *state.Shuffle) {
	out := plan.PColls[s.Outputs[0]]
	if h.above <= 0 || out.HeldReaders == 0 {
		return
	}
	sh.Hold(state.HoldOptions{Above: h.above, Readers: out.HeldReaders,
		Timestamps: s.OutputTime != pipepb.OutputTime_END_OF_WINDOW})
	h.mu.Lock()
	h.shuffles[s.Transforms[0]] = append(h.shuffles[s.Transforms[0]], sh)
	h.mu.Unlock()
}

// input returns what SDK stage s needs to read its main input's held
// groups, or nil.
func (h *heldGroups) input(plan *translate.Plan, s *translate.Stage) *executor.HeldInput {
	in := plan.PColls[s.MainInput()]
	if h.above <= 0 || in.HeldReaders == 0 {
		return nil
	}
	return &executor.HeldInput{Store: h.store, Codec: in.Codec, Key: in.Key}
}

// MonitoringInfos is a metrics.Source.
func (h *heldGroups) MonitoringInfos() []*pipepb.MonitoringInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*pipepb.MonitoringInfo
	for t, shs := range h.shuffles {
		var sum state.HeldStats
		for _, sh := range shs {
			st := sh.HeldStats()
			sum.Groups += st.Groups
			sum.Pages += st.Pages
		}
		out = append(out, metrics.UserCounter(executor.MetricsNamespace, MetricHeldGroups, t, sum.Groups),
			metrics.UserCounter(executor.MetricsNamespace, MetricHeldPages, t, sum.Pages))
	}
	return out
}
