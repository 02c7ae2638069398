package metrics

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// URNs of the metrics the tests report, as the Go SDK names them.
var (
	urnUserSum     = metricsx.UrnToString(metricsx.UrnUserSumInt64)
	urnUserSumF    = metricsx.UrnToString(metricsx.UrnUserSumFloat64)
	urnUserDist    = metricsx.UrnToString(metricsx.UrnUserDistInt64)
	urnUserDistF   = metricsx.UrnToString(metricsx.UrnUserDistFloat64)
	urnUserLatest  = metricsx.UrnToString(metricsx.UrnUserLatestMsInt64)
	urnUserLatestF = metricsx.UrnToString(metricsx.UrnUserLatestMsFloat64)
	urnElements    = metricsx.UrnToString(metricsx.UrnElementCount)
	urnByteSize    = metricsx.UrnToString(metricsx.UrnSampledByteSize)
	urnTotalMsecs  = metricsx.UrnToString(metricsx.UrnTransformTotalTime)
	urnSetString   = "beam:metric:user:set_string:v1"
)

// The payload encoders below use the Go SDK's own encoders wherever it has
// them, so the tests check the store against what workers really send.

func mustBytes(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func pCounter(v int64) []byte { return mustBytes(metricsx.Int64Counter(v)) }

func pDist(count, sum, lo, hi int64) []byte {
	return mustBytes(metricsx.Int64Distribution(count, sum, lo, hi))
}

func pLatest(ms, v int64) []byte {
	return mustBytes(metricsx.Int64Latest(time.UnixMilli(ms), v))
}

func pDouble(vs ...float64) []byte {
	var buf bytes.Buffer
	for _, v := range vs {
		if err := coder.EncodeDouble(v, &buf); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

func pVarints(vs ...int64) []byte {
	var buf bytes.Buffer
	for _, v := range vs {
		if err := coder.EncodeVarInt(v, &buf); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

func pDistF(count int64, sum, lo, hi float64) []byte {
	return append(pVarints(count), pDouble(sum, lo, hi)...)
}

func pLatestF(ms int64, v float64) []byte { return append(pVarints(ms), pDouble(v)...) }

// pSet encodes an iterable of strings with a known length.
func pSet(ss ...string) []byte {
	var buf bytes.Buffer
	if err := coder.EncodeInt32(int32(len(ss)), &buf); err != nil {
		panic(err)
	}
	for _, s := range ss {
		if err := coder.EncodeStringUTF8(s, &buf); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

// pSetChunked encodes an iterable of strings of unknown length, one block per
// argument.
func pSetChunked(blocks ...[]string) []byte {
	var buf bytes.Buffer
	if err := coder.EncodeInt32(-1, &buf); err != nil {
		panic(err)
	}
	for _, blk := range blocks {
		buf.Write(pVarints(int64(len(blk))))
		for _, s := range blk {
			if err := coder.EncodeStringUTF8(s, &buf); err != nil {
				panic(err)
			}
		}
	}
	buf.Write(pVarints(0))
	return buf.Bytes()
}

func user(step, ns, name string) map[string]string {
	return map[string]string{"PTRANSFORM": step, "NAMESPACE": ns, "NAME": name}
}

func pcol(id string) map[string]string { return map[string]string{"PCOLLECTION": id} }

func ptransform(id string) map[string]string { return map[string]string{"PTRANSFORM": id} }

// mi builds a MonitoringInfo with the type the Go SDK gives urn, or no type
// for URNs it does not know.
func mi(urn string, labels map[string]string, payload []byte) *pipepb.MonitoringInfo {
	return &pipepb.MonitoringInfo{Urn: urn, Type: urnTypes[urn], Labels: labels, Payload: payload}
}

// miT builds a MonitoringInfo with an explicit type.
func miT(urn, typ string, labels map[string]string, payload []byte) *pipepb.MonitoringInfo {
	return &pipepb.MonitoringInfo{Urn: urn, Type: typ, Labels: labels, Payload: payload}
}

// bundle is one bundle attempt's report to the store.
type bundle struct {
	failed bool // reported with Attempt, rather than Commit
	infos  []*pipepb.MonitoringInfo
}

func ok(infos ...*pipepb.MonitoringInfo) bundle     { return bundle{infos: infos} }
func failed(infos ...*pipepb.MonitoringInfo) bundle { return bundle{failed: true, infos: infos} }

// describe renders MonitoringInfos one a line, sorted, for comparisons and
// failure messages.
func describe(infos []*pipepb.MonitoringInfo) string {
	var lines []string
	for _, m := range infos {
		var ls []string
		for k, v := range m.GetLabels() {
			ls = append(ls, k+"="+v)
		}
		sort.Strings(ls)
		lines = append(lines, fmt.Sprintf("%s %s {%s} %x", m.GetUrn(), m.GetType(), strings.Join(ls, ","), m.GetPayload()))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestStore(t *testing.T) {
	tests := []struct {
		name      string
		bundles   []bundle
		attempted []*pipepb.MonitoringInfo // nil: same as committed
		committed []*pipepb.MonitoringInfo
		skipped   int
	}{
		{
			name: "counters sum over bundles",
			bundles: []bundle{
				ok(
					mi(urnUserSum, user("s1", "ns", "c"), pCounter(3)),
					mi(urnUserSum, user("s2", "ns", "c"), pCounter(10)),
					mi(urnElements, pcol("pc1"), pCounter(5)),
					mi(urnTotalMsecs, ptransform("s1"), pCounter(7)),
				),
				ok(
					mi(urnUserSum, user("s1", "ns", "c"), pCounter(4)),
					mi(urnElements, pcol("pc1"), pCounter(6)),
					mi(urnTotalMsecs, ptransform("s1"), pCounter(8)),
				),
				ok(
					mi(urnUserSum, user("s1", "ns", "c"), pCounter(-2)),
					mi(urnUserSum, user("s1", "ns", "other"), pCounter(1)),
				),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnUserSum, user("s1", "ns", "c"), pCounter(5)),
				mi(urnUserSum, user("s1", "ns", "other"), pCounter(1)),
				mi(urnUserSum, user("s2", "ns", "c"), pCounter(10)),
				mi(urnElements, pcol("pc1"), pCounter(11)),
				mi(urnTotalMsecs, ptransform("s1"), pCounter(15)),
			},
		},
		{
			name: "double counters sum",
			bundles: []bundle{
				ok(mi(urnUserSumF, user("s", "ns", "f"), pDouble(1.25))),
				ok(mi(urnUserSumF, user("s", "ns", "f"), pDouble(2.5))),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnUserSumF, user("s", "ns", "f"), pDouble(3.75)),
			},
		},
		{
			name: "distributions merge",
			bundles: []bundle{
				ok(
					mi(urnUserDist, user("s", "ns", "d"), pDist(2, 10, 4, 6)),
					mi(urnByteSize, pcol("pc"), pDist(1, 100, 100, 100)),
				),
				ok(
					mi(urnUserDist, user("s", "ns", "d"), pDist(3, 6, -1, 5)),
					mi(urnByteSize, pcol("pc"), pDist(2, 30, 10, 20)),
				),
				// Empty distributions, whole or as a bare count, change nothing.
				ok(mi(urnUserDist, user("s", "ns", "d"), pDist(0, 0, 0, 0))),
				ok(mi(urnUserDist, user("s", "ns", "d"), pVarints(0))),
				ok(mi(urnUserDist, user("s", "ns", "d"), pDist(1, 7, 7, 7))),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnUserDist, user("s", "ns", "d"), pDist(6, 23, -1, 7)),
				mi(urnByteSize, pcol("pc"), pDist(3, 130, 10, 100)),
			},
		},
		{
			name: "empty distribution first",
			bundles: []bundle{
				ok(mi(urnUserDist, user("s", "ns", "d"), pVarints(0))),
				ok(mi(urnUserDist, user("s", "ns", "e"), pVarints(0))),
				ok(mi(urnUserDist, user("s", "ns", "d"), pDist(2, 30, 10, 20))),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnUserDist, user("s", "ns", "d"), pDist(2, 30, 10, 20)),
				mi(urnUserDist, user("s", "ns", "e"), pDist(0, 0, 0, 0)),
			},
		},
		{
			name: "double distributions merge",
			bundles: []bundle{
				ok(mi(urnUserDistF, user("s", "ns", "d"), pDistF(2, 1.5, 0.5, 1))),
				ok(mi(urnUserDistF, user("s", "ns", "d"), pDistF(1, -2, -2, -2))),
				ok(mi(urnUserDistF, user("s", "ns", "d"), pVarints(0))),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnUserDistF, user("s", "ns", "d"), pDistF(3, -0.5, -2, 1)),
			},
		},
		{
			name: "gauges keep the latest timestamp",
			bundles: []bundle{
				ok(mi(urnUserLatest, user("s", "ns", "g"), pLatest(2000, 20))),
				ok(mi(urnUserLatest, user("s", "ns", "g"), pLatest(3000, 30))),
				// Arrives last but was set earlier.
				ok(mi(urnUserLatest, user("s", "ns", "g"), pLatest(1000, 10))),
				// Of equal timestamps, the one reported last wins.
				ok(mi(urnUserLatest, user("s", "ns", "h"), pLatest(5000, 1))),
				ok(mi(urnUserLatest, user("s", "ns", "h"), pLatest(5000, 2))),
				ok(mi(urnUserLatestF, user("s", "ns", "f"), pLatestF(9000, 0.5))),
				ok(mi(urnUserLatestF, user("s", "ns", "f"), pLatestF(8000, 1.5))),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnUserLatest, user("s", "ns", "g"), pLatest(3000, 30)),
				mi(urnUserLatest, user("s", "ns", "h"), pLatest(5000, 2)),
				mi(urnUserLatestF, user("s", "ns", "f"), pLatestF(9000, 0.5)),
			},
		},
		{
			name: "string sets unite",
			bundles: []bundle{
				ok(mi(urnSetString, user("s", "ns", "set"), pSet("b", "a"))),
				ok(mi(urnSetString, user("s", "ns", "set"), pSetChunked([]string{"c"}, []string{"a", "d"}))),
				ok(mi(urnSetString, user("s", "ns", "set"), pSet())),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnSetString, user("s", "ns", "set"), pSet("a", "b", "c", "d")),
			},
		},
		{
			name: "attempted includes failed attempts",
			bundles: []bundle{
				ok(
					mi(urnUserSum, user("s", "ns", "c"), pCounter(5)),
					mi(urnUserDist, user("s", "ns", "d"), pDist(1, 5, 5, 5)),
					mi(urnUserLatest, user("s", "ns", "g"), pLatest(1000, 1)),
				),
				failed(
					mi(urnUserSum, user("s", "ns", "c"), pCounter(3)),
					mi(urnUserDist, user("s", "ns", "d"), pDist(1, 50, 50, 50)),
					mi(urnUserLatest, user("s", "ns", "g"), pLatest(2000, 2)),
					mi(urnUserSum, user("s", "ns", "only-failed"), pCounter(1)),
				),
				ok(
					mi(urnUserSum, user("s", "ns", "c"), pCounter(2)),
					mi(urnUserDist, user("s", "ns", "d"), pDist(1, 1, 1, 1)),
				),
			},
			attempted: []*pipepb.MonitoringInfo{
				mi(urnUserSum, user("s", "ns", "c"), pCounter(10)),
				mi(urnUserSum, user("s", "ns", "only-failed"), pCounter(1)),
				mi(urnUserDist, user("s", "ns", "d"), pDist(3, 56, 1, 50)),
				mi(urnUserLatest, user("s", "ns", "g"), pLatest(2000, 2)),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnUserSum, user("s", "ns", "c"), pCounter(7)),
				mi(urnUserDist, user("s", "ns", "d"), pDist(2, 6, 1, 5)),
				mi(urnUserLatest, user("s", "ns", "g"), pLatest(1000, 1)),
			},
		},
		{
			name: "only failed attempts",
			bundles: []bundle{
				failed(mi(urnUserSum, user("s", "ns", "c"), pCounter(3))),
			},
			attempted: []*pipepb.MonitoringInfo{
				mi(urnUserSum, user("s", "ns", "c"), pCounter(3)),
			},
			committed: []*pipepb.MonitoringInfo{},
		},
		{
			name: "malformed payloads are skipped",
			bundles: []bundle{
				ok(
					mi(urnUserSum, user("s", "ns", "c"), pCounter(4)),
					mi(urnUserSum, user("s", "ns", "c"), nil),                                      // empty
					mi(urnUserSum, user("s", "ns", "c"), []byte{0x80}),                             // truncated varint
					mi(urnUserSum, user("s", "ns", "c"), bytes.Repeat([]byte{0xff}, 11)),           // varint over 64 bits
					mi(urnUserSum, user("s", "ns", "c"), append(pCounter(1), 0)),                   // trailing byte
					mi(urnUserSumF, user("s", "ns", "f"), []byte{1, 2, 3}),                         // short double
					mi(urnUserDist, user("s", "ns", "d"), pVarints(2, 10, 4)),                      // missing max
					mi(urnUserDist, user("s", "ns", "d"), pDist(-1, 0, 0, 0)),                      // negative count
					mi(urnUserDistF, user("s", "ns", "df"), pVarints(1, 1, 1, 1)),                  // varints, not doubles
					mi(urnUserLatest, user("s", "ns", "g"), pVarints(1000)),                        // missing value
					mi(urnUserLatestF, user("s", "ns", "gf"), append(pVarints(1000), 1, 2)),        // short double
					mi(urnSetString, user("s", "ns", "set"), []byte{0, 0, 0, 1, 0xff, 0xff, 0x7f}), // huge string length
					mi(urnSetString, user("s", "ns", "set"), []byte{0xff, 0xff, 0xff, 0xfe}),       // count -2
					mi(urnSetString, user("s", "ns", "set"), pSetChunked([]string{"a"})[:9]),       // unterminated
					mi("", nil, pCounter(1)),                                                       // no URN
					nil,                                                                            // ignored, not counted
				),
				ok(mi(urnUserSum, user("s", "ns", "c"), pCounter(1))),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnUserSum, user("s", "ns", "c"), pCounter(5)),
			},
			skipped: 14,
		},
		{
			name: "malformed payloads in failed attempts are skipped",
			bundles: []bundle{
				failed(mi(urnUserSum, user("s", "ns", "c"), []byte{0x80})),
				ok(mi(urnUserSum, user("s", "ns", "c"), pCounter(2))),
			},
			committed: []*pipepb.MonitoringInfo{
				mi(urnUserSum, user("s", "ns", "c"), pCounter(2)),
			},
			skipped: 1,
		},
		{
			name: "unknown types keep the latest payload",
			bundles: []bundle{
				ok(miT("example:metric:v1", "example:type:v1", ptransform("s"), []byte("first"))),
				ok(miT("example:metric:v1", "example:type:v1", ptransform("s"), []byte("second"))),
				ok(miT("example:untyped:v1", "", nil, []byte{0xff})),
				ok(miT(urnUserSum, "beam:metrics:top_n_int64:v1", user("s", "ns", "t"), []byte{9})),
				ok(miT(urnUserSum, "beam:metrics:top_n_int64:v1", user("s", "ns", "t"), []byte{8})),
			},
			committed: []*pipepb.MonitoringInfo{
				miT("example:metric:v1", "example:type:v1", ptransform("s"), []byte("second")),
				miT("example:untyped:v1", "", nil, []byte{0xff}),
				miT(urnUserSum, "beam:metrics:top_n_int64:v1", user("s", "ns", "t"), []byte{8}),
			},
		},
		{
			name: "missing type comes from the URN's spec",
			bundles: []bundle{
				ok(miT(urnUserSum, "", user("s", "ns", "c"), pCounter(2))),
				ok(miT(urnUserSum, typeSumInt64, user("s", "ns", "c"), pCounter(3))),
				ok(miT(urnUserDist, "", user("s", "ns", "d"), pDist(1, 2, 2, 2))),
			},
			committed: []*pipepb.MonitoringInfo{
				miT(urnUserSum, typeSumInt64, user("s", "ns", "c"), pCounter(5)),
				miT(urnUserDist, typeDistributionInt64, user("s", "ns", "d"), pDist(1, 2, 2, 2)),
			},
		},
		{
			name: "identity is URN, type and all labels",
			bundles: []bundle{
				ok(
					miT("u", typeSumInt64, map[string]string{"a": "bc"}, pCounter(1)),
					miT("u", typeSumInt64, map[string]string{"ab": "c"}, pCounter(2)),
					miT("u", typeSumInt64, map[string]string{"a": "b", "c": ""}, pCounter(4)),
					miT("u", typeSumInt64, nil, pCounter(8)),
					miT("u", typeSumInt64, map[string]string{}, pCounter(16)),
					miT("v", typeSumInt64, map[string]string{"a": "bc"}, pCounter(32)),
					miT("u", typeLatestInt64, map[string]string{"a": "bc"}, pLatest(1, 64)),
				),
			},
			committed: []*pipepb.MonitoringInfo{
				miT("u", typeSumInt64, map[string]string{"a": "bc"}, pCounter(1)),
				miT("u", typeSumInt64, map[string]string{"ab": "c"}, pCounter(2)),
				miT("u", typeSumInt64, map[string]string{"a": "b", "c": ""}, pCounter(4)),
				miT("u", typeSumInt64, nil, pCounter(24)),
				miT("v", typeSumInt64, map[string]string{"a": "bc"}, pCounter(32)),
				miT("u", typeLatestInt64, map[string]string{"a": "bc"}, pLatest(1, 64)),
			},
		},
		{
			name:      "nothing reported",
			committed: []*pipepb.MonitoringInfo{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore()
			for _, b := range tt.bundles {
				if b.failed {
					s.Attempt(b.infos)
				} else {
					s.Commit(b.infos)
				}
			}
			res := s.Results()
			wantAttempted := tt.attempted
			if wantAttempted == nil {
				wantAttempted = tt.committed
			}
			if got, want := describe(res.GetAttempted()), describe(wantAttempted); got != want {
				t.Errorf("attempted:\n%s\nwant:\n%s", got, want)
			}
			if got, want := describe(res.GetCommitted()), describe(tt.committed); got != want {
				t.Errorf("committed:\n%s\nwant:\n%s", got, want)
			}
			if got := s.Skipped(); got != tt.skipped {
				t.Errorf("Skipped() = %d, want %d", got, tt.skipped)
			}
		})
	}
}

// TestRoundTrip aggregates what Go SDK workers report and reads the result
// back as beamx.RunWithMetrics does.
func TestRoundTrip(t *testing.T) {
	p := &pipepb.Pipeline{Components: &pipepb.Components{Transforms: map[string]*pipepb.PTransform{
		"t1": {UniqueName: "Read", Outputs: map[string]string{"out": "pc1"}},
		"t2": {UniqueName: "Count", Outputs: map[string]string{"out": "pc2"}},
	}}}
	s := NewStore()
	s.Commit([]*pipepb.MonitoringInfo{
		mi(urnUserSum, user("Read", "ns", "lines"), pCounter(10)),
		mi(urnUserDist, user("Count", "ns", "len"), pDist(2, 9, 4, 5)),
		mi(urnUserLatest, user("Count", "ns", "last"), pLatest(1000, 1)),
		mi(urnElements, pcol("pc1"), pCounter(10)),
		mi(urnByteSize, pcol("pc1"), pDist(10, 100, 5, 20)),
		mi(urnTotalMsecs, ptransform("Read"), pCounter(30)),
	})
	s.Attempt([]*pipepb.MonitoringInfo{ // a failed attempt, retried below
		mi(urnUserSum, user("Read", "ns", "lines"), pCounter(7)),
		mi(urnUserDist, user("Count", "ns", "len"), pDist(1, 100, 100, 100)),
		mi(urnUserLatest, user("Count", "ns", "last"), pLatest(9000, 9)),
		mi(urnElements, pcol("pc1"), pCounter(7)),
		mi(urnTotalMsecs, ptransform("Read"), pCounter(5)),
	})
	s.Commit([]*pipepb.MonitoringInfo{
		mi(urnUserSum, user("Read", "ns", "lines"), pCounter(7)),
		mi(urnUserSum, user("Count", "ns", "lines"), pCounter(1)),
		mi(urnUserDist, user("Count", "ns", "len"), pDist(1, 3, 3, 3)),
		mi(urnUserLatest, user("Count", "ns", "last"), pLatest(2000, 2)),
		mi(urnElements, pcol("pc1"), pCounter(7)),
		mi(urnElements, pcol("pc2"), pCounter(3)),
		mi(urnByteSize, pcol("pc1"), pDist(7, 70, 1, 10)),
		mi(urnTotalMsecs, ptransform("Read"), pCounter(12)),
	})
	res := s.Results()
	got := metricsx.FromMonitoringInfos(p, res.GetAttempted(), res.GetCommitted()).AllMetrics()

	key := func(step, name string) metrics.StepKey {
		return metrics.StepKey{Step: step, Name: name, Namespace: "ns"}
	}

	counters := map[metrics.StepKey][2]int64{} // attempted, committed
	for _, c := range got.Counters() {
		counters[c.Key] = [2]int64{c.Attempted, c.Committed}
	}
	wantCounters := map[metrics.StepKey][2]int64{
		key("Read", "lines"):  {24, 17},
		key("Count", "lines"): {1, 1},
	}
	if fmt.Sprint(counters) != fmt.Sprint(wantCounters) {
		t.Errorf("counters = %v, want %v", counters, wantCounters)
	}

	dists := got.Distributions()
	if len(dists) != 1 {
		t.Fatalf("distributions = %+v, want one", dists)
	}
	wantA := metrics.DistributionValue{Count: 4, Sum: 112, Min: 3, Max: 100}
	wantC := metrics.DistributionValue{Count: 3, Sum: 12, Min: 3, Max: 5}
	if d := dists[0]; d.Key != key("Count", "len") || d.Attempted != wantA || d.Committed != wantC {
		t.Errorf("distribution = %+v, want %v attempted %+v committed %+v", d, key("Count", "len"), wantA, wantC)
	}

	gauges := got.Gauges()
	if len(gauges) != 1 {
		t.Fatalf("gauges = %+v, want one", gauges)
	}
	g := gauges[0]
	if g.Key != key("Count", "last") ||
		g.Attempted.Value != 9 || g.Attempted.Timestamp.UnixMilli() != 9000 ||
		g.Committed.Value != 2 || g.Committed.Timestamp.UnixMilli() != 2000 {
		t.Errorf("gauge = %+v, want %v attempted 9@9000ms committed 2@2000ms", g, key("Count", "last"))
	}

	pcols := map[string]metrics.PColValue{}
	for _, pc := range got.PCols() {
		pcols[pc.Key.Step] = pc.Committed
	}
	wantPCols := map[string]metrics.PColValue{
		"Read.out":  {ElementCount: 17, SampledByteSize: metrics.DistributionValue{Count: 17, Sum: 170, Min: 1, Max: 20}},
		"Count.out": {ElementCount: 3},
	}
	if fmt.Sprint(pcols) != fmt.Sprint(wantPCols) {
		t.Errorf("committed pcollection metrics = %v, want %v", pcols, wantPCols)
	}

	msecs := got.Msecs()
	if len(msecs) != 1 || msecs[0].Key.Step != "Read" ||
		msecs[0].Committed.Total != 42*time.Millisecond || msecs[0].Attempted.Total != 47*time.Millisecond {
		t.Errorf("msecs = %+v, want Read total 47ms attempted, 42ms committed", msecs)
	}
}

// TestConcurrent reports bundles from many goroutines; run with -race.
func TestConcurrent(t *testing.T) {
	s := NewStore()
	const workers, bundles = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for b := range bundles {
				infos := []*pipepb.MonitoringInfo{
					mi(urnUserSum, user("s", "ns", "c"), pCounter(1)),
					mi(urnUserDist, user("s", "ns", "d"), pDist(1, int64(b), int64(b), int64(b))),
					mi(urnUserLatest, user("s", "ns", "g"), pLatest(int64(w*bundles+b), int64(w*bundles+b))),
				}
				if b%10 == 0 {
					s.Attempt(infos)
				} else {
					s.Commit(infos)
				}
				if b%50 == 0 {
					_ = s.Results()
				}
			}
		})
	}
	wg.Wait()
	res := s.Results()
	last := int64(workers*bundles - 1)
	perWorkerSum := int64(bundles * (bundles - 1) / 2)
	wantAttempted := []*pipepb.MonitoringInfo{
		mi(urnUserSum, user("s", "ns", "c"), pCounter(workers*bundles)),
		mi(urnUserDist, user("s", "ns", "d"), pDist(workers*bundles, workers*perWorkerSum, 0, bundles-1)),
		mi(urnUserLatest, user("s", "ns", "g"), pLatest(last, last)),
	}
	if got, want := describe(res.GetAttempted()), describe(wantAttempted); got != want {
		t.Errorf("attempted:\n%s\nwant:\n%s", got, want)
	}
	committed := int64(workers * (bundles - bundles/10))
	var counter []byte
	for _, m := range res.GetCommitted() {
		if m.GetUrn() == urnUserSum {
			counter = m.GetPayload()
		}
	}
	if !bytes.Equal(counter, pCounter(committed)) {
		t.Errorf("committed counter = %x, want %x", counter, pCounter(committed))
	}
}

// TestResultsAreCopies checks that neither the caller's MonitoringInfos nor the
// returned results alias the store's state.
func TestResultsAreCopies(t *testing.T) {
	s := NewStore()
	labels := user("s", "ns", "c")
	payload := pCounter(1)
	in := []*pipepb.MonitoringInfo{
		mi(urnUserSum, labels, payload),
		miT("x", "unknown", labels, payload),
	}
	s.Commit(in)
	labels["NAME"] = "changed"
	payload[0] = 99

	res := s.Results()
	res.GetCommitted()[0].Labels["NAME"] = "changed too"
	res.GetCommitted()[0].Payload[0] = 98
	res.GetCommitted()[1].Payload[0] = 98

	want := []*pipepb.MonitoringInfo{
		mi(urnUserSum, user("s", "ns", "c"), pCounter(1)),
		miT("x", "unknown", user("s", "ns", "c"), pCounter(1)),
	}
	if got, want := describe(s.Results().GetCommitted()), describe(want); got != want {
		t.Errorf("committed:\n%s\nwant:\n%s", got, want)
	}
}

// TestResultsOrder checks that Results lists aggregates in a stable order.
func TestResultsOrder(t *testing.T) {
	s := NewStore()
	s.Commit([]*pipepb.MonitoringInfo{
		miT("b", typeSumInt64, map[string]string{"k": "2"}, pCounter(1)),
		miT("a", typeSumInt64, map[string]string{"k": "1"}, pCounter(1)),
		miT("b", typeSumInt64, map[string]string{"k": "1"}, pCounter(1)),
		miT("a", typeLatestInt64, nil, pLatest(1, 1)),
	})
	var got []string
	for _, m := range s.Results().GetCommitted() {
		got = append(got, m.GetUrn()+"/"+m.GetType()+"/"+m.GetLabels()["k"])
	}
	want := []string{
		"a/" + typeLatestInt64 + "/",
		"a/" + typeSumInt64 + "/1",
		"b/" + typeSumInt64 + "/1",
		"b/" + typeSumInt64 + "/2",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

// TestTypeURNs checks the store's type URNs against the model's.
func TestTypeURNs(t *testing.T) {
	for typ, want := range map[pipepb.MonitoringInfoTypeUrns_Enum]string{
		pipepb.MonitoringInfoTypeUrns_SUM_INT64_TYPE:           typeSumInt64,
		pipepb.MonitoringInfoTypeUrns_SUM_DOUBLE_TYPE:          typeSumDouble,
		pipepb.MonitoringInfoTypeUrns_DISTRIBUTION_INT64_TYPE:  typeDistributionInt64,
		pipepb.MonitoringInfoTypeUrns_DISTRIBUTION_DOUBLE_TYPE: typeDistributionFloat,
		pipepb.MonitoringInfoTypeUrns_LATEST_INT64_TYPE:        typeLatestInt64,
		pipepb.MonitoringInfoTypeUrns_LATEST_DOUBLE_TYPE:       typeLatestDouble,
		pipepb.MonitoringInfoTypeUrns_SET_STRING_TYPE:          typeSetString,
	} {
		if got := typeURN(typ); got != want {
			t.Errorf("%v: model says %q, store uses %q", typ, got, want)
		}
	}
	// The spec table agrees with the Go SDK's for the metrics it reports.
	for _, u := range []metricsx.Urn{
		metricsx.UrnUserSumInt64, metricsx.UrnUserSumFloat64, metricsx.UrnUserDistInt64,
		metricsx.UrnUserDistFloat64, metricsx.UrnUserLatestMsInt64, metricsx.UrnUserLatestMsFloat64,
		metricsx.UrnElementCount, metricsx.UrnSampledByteSize, metricsx.UrnStartBundle,
		metricsx.UrnProcessBundle, metricsx.UrnFinishBundle, metricsx.UrnTransformTotalTime,
	} {
		urn := metricsx.UrnToString(u)
		if got, want := urnTypes[urn], metricsx.UrnToType(u); got != want {
			t.Errorf("type of %s: spec %q, Go SDK %q", urn, got, want)
		}
	}
	if got := urnTypes[urnSetString]; got != typeSetString {
		t.Errorf("type of %s = %q, want %q", urnSetString, got, typeSetString)
	}
}

// TestCodec checks the package's varint and double coding against the Go
// SDK's coders, over values whose encodings differ in length and sign.
func TestCodec(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 300, 1 << 35, math.MaxInt64, -1, -300, math.MinInt64} {
		want := pVarints(v)
		if got := appendVarint(nil, v); !bytes.Equal(got, want) {
			t.Errorf("appendVarint(%d) = %x, want %x", v, got, want)
		}
		r := &reader{buf: want}
		if got, err := r.varint(); err != nil || got != v || r.done() != nil {
			t.Errorf("varint(%x) = %d, %v, want %d", want, got, err, v)
		}
	}
	for _, v := range []float64{0, -0.5, 1e300, math.Inf(-1), math.SmallestNonzeroFloat64} {
		want := pDouble(v)
		if got := appendDouble(nil, v); !bytes.Equal(got, want) {
			t.Errorf("appendDouble(%v) = %x, want %x", v, got, want)
		}
		r := &reader{buf: want}
		if got, err := r.double(); err != nil || got != v || r.done() != nil {
			t.Errorf("double(%x) = %v, %v, want %v", want, got, err, v)
		}
	}
	// The largest varint that fits in 64 bits decodes; one bit more does not.
	maxU := binary.AppendUvarint(nil, math.MaxUint64)
	if _, err := (&reader{buf: maxU}).varint(); err != nil {
		t.Errorf("varint(%x): %v", maxU, err)
	}
	over := append(bytes.Repeat([]byte{0xff}, 9), 0x02)
	if _, err := (&reader{buf: over}).varint(); err == nil {
		t.Errorf("varint(%x) succeeded, want overflow", over)
	}
	if _, err := coder.DecodeVarInt(bytes.NewReader(over)); err == nil {
		t.Errorf("coder.DecodeVarInt(%x) succeeded; the SDK's overflow check changed", over)
	}
}

// FuzzDecode checks that no payload panics the decoders, and that what they
// accept re-encodes to something they accept again.
func FuzzDecode(f *testing.F) {
	types := []string{typeSumInt64, typeSumDouble, typeDistributionInt64, typeDistributionFloat,
		typeLatestInt64, typeLatestDouble, typeSetString, "unknown"}
	f.Add(uint8(0), pCounter(5))
	f.Add(uint8(2), pDist(2, 3, 1, 2))
	f.Add(uint8(6), pSetChunked([]string{"a"}, []string{"b"}))
	f.Fuzz(func(t *testing.T, typ uint8, payload []byte) {
		tn := types[int(typ)%len(types)]
		v, err := decode(tn, payload)
		if err != nil {
			return
		}
		if _, err := decode(tn, v.payload()); err != nil {
			t.Errorf("%s: re-encoded %x of %x does not decode: %v", tn, v.payload(), payload, err)
		}
	})
}
