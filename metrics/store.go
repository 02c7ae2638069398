package metrics

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Store aggregates the MonitoringInfos of a job's bundles. The zero value is
// not usable; call NewStore. A Store is safe for concurrent use.
type Store struct {
	mu        sync.Mutex
	attempted map[string]*entry
	committed map[string]*entry
	skipped   int
	sources   []Source
}

// Source reports metrics the runner keeps itself (late data, arrival
// delays), as current totals rather than per-bundle deltas. Results calls
// it each time and merges what it returns, as committed and as attempted,
// without storing it.
type Source func() []*pipepb.MonitoringInfo

// AddSource adds a source of runner metrics to every later Results.
func (s *Store) AddSource(src Source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sources = append(s.sources, src)
}

// entry is the aggregate of one metric identity.
type entry struct {
	urn, typ string
	labels   map[string]string
	agg      aggregate
}

// sample is one decoded MonitoringInfo, ready to merge.
type sample struct {
	key      string
	urn, typ string
	labels   map[string]string // the caller's map; copied when first stored
	val      aggregate
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{attempted: map[string]*entry{}, committed: map[string]*entry{}}
}

// Attempt merges the MonitoringInfos of a bundle attempt, successful or not,
// into the attempted metrics. Call it for a bundle attempt that failed; for one
// that succeeded call Commit instead, which also counts it as attempted.
func (s *Store) Attempt(infos []*pipepb.MonitoringInfo) {
	samples, bad := parse(infos)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skipped += bad
	for _, sm := range samples {
		mergeInto(s.attempted, sm)
	}
}

// Commit merges the MonitoringInfos of a bundle that succeeded into both the
// committed and the attempted metrics.
func (s *Store) Commit(infos []*pipepb.MonitoringInfo) {
	samples, bad := parse(infos)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skipped += bad
	for _, sm := range samples {
		mergeInto(s.attempted, sm)
		mergeInto(s.committed, sm)
	}
}

// Results returns the aggregated metrics, one MonitoringInfo per identity in
// each list, ordered by URN, type and labels. Payloads are encoded as the
// SDKs encode them, so metricsx.FromMonitoringInfos can read them. The
// result shares no memory with the store.
func (s *Store) Results() *jobpb.MetricResults {
	s.mu.Lock()
	sources := slices.Clone(s.sources)
	s.mu.Unlock()
	var extra []sample
	for _, src := range sources {
		samples, _ := parse(src())
		extra = append(extra, samples...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(extra) == 0 {
		return &jobpb.MetricResults{
			Attempted: export(s.attempted),
			Committed: export(s.committed),
		}
	}
	return &jobpb.MetricResults{
		Attempted: export(withSamples(s.attempted, extra)),
		Committed: export(withSamples(s.committed, extra)),
	}
}

// Skipped returns how many MonitoringInfos were dropped because their payload
// could not be decoded as their type requires, or because they had no URN.
func (s *Store) Skipped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skipped
}

// parse decodes infos, reporting how many it had to drop. Nil infos are
// ignored without counting.
func parse(infos []*pipepb.MonitoringInfo) ([]sample, int) {
	samples := make([]sample, 0, len(infos))
	bad := 0
	for _, mi := range infos {
		if mi == nil {
			continue
		}
		urn := mi.GetUrn()
		if urn == "" {
			bad++
			continue
		}
		typ := mi.GetType()
		if typ == "" {
			typ = urnTypes[urn]
		}
		val, err := decode(typ, mi.GetPayload())
		if err != nil {
			bad++
			continue
		}
		samples = append(samples, sample{
			key:    identity(urn, typ, mi.GetLabels()),
			urn:    urn,
			typ:    typ,
			labels: mi.GetLabels(),
			val:    val,
		})
	}
	return samples, bad
}

// identity returns a key that is equal for two MonitoringInfos exactly when
// their URN, type and labels are. Every part is length-prefixed, so no
// content can imitate a separator.
func identity(urn, typ string, labels map[string]string) string {
	var b strings.Builder
	put := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	put(urn)
	put(typ)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		put(k)
		put(labels[k])
	}
	return b.String()
}

// withSamples returns a copy of m with extra merged in; m is unchanged.
func withSamples(m map[string]*entry, extra []sample) map[string]*entry {
	c := make(map[string]*entry, len(m)+len(extra))
	for k, e := range m {
		c[k] = &entry{urn: e.urn, typ: e.typ, labels: e.labels, agg: e.agg.clone()}
	}
	for _, sm := range extra {
		mergeInto(c, sm)
	}
	return c
}

func mergeInto(m map[string]*entry, sm sample) {
	if e, ok := m[sm.key]; ok {
		e.agg.merge(sm.val)
		return
	}
	m[sm.key] = &entry{
		urn:    sm.urn,
		typ:    sm.typ,
		labels: maps.Clone(sm.labels),
		agg:    sm.val.clone(),
	}
}

func export(m map[string]*entry) []*pipepb.MonitoringInfo {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		ea, eb := m[a], m[b]
		return cmp.Or(cmp.Compare(ea.urn, eb.urn), cmp.Compare(ea.typ, eb.typ), cmp.Compare(a, b))
	})
	out := make([]*pipepb.MonitoringInfo, 0, len(keys))
	for _, k := range keys {
		e := m[k]
		out = append(out, &pipepb.MonitoringInfo{
			Urn:     e.urn,
			Type:    e.typ,
			Labels:  maps.Clone(e.labels),
			Payload: e.agg.payload(),
		})
	}
	return out
}
