package metrics

import (
	"bytes"
	"slices"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The MonitoringInfo type URNs whose payloads the store decodes and combines.
// TestTypeURNs checks them against the beam_urn options of the model's
// MonitoringInfoTypeUrns enum.
const (
	typeSumInt64          = "beam:metrics:sum_int64:v1"
	typeSumDouble         = "beam:metrics:sum_double:v1"
	typeDistributionInt64 = "beam:metrics:distribution_int64:v1"
	typeDistributionFloat = "beam:metrics:distribution_double:v1"
	typeLatestInt64       = "beam:metrics:latest_int64:v1"
	typeLatestDouble      = "beam:metrics:latest_double:v1"
	typeSetString         = "beam:metrics:set_string:v1"
)

// urnTypes maps the URN of each well-known metric to its type URN, as the
// model's MonitoringInfoSpecs declare it. It supplies the type of a
// MonitoringInfo that arrives without one.
var urnTypes = func() map[string]string {
	m := map[string]string{}
	values := pipepb.MonitoringInfoSpecs_Enum(0).Descriptor().Values()
	for i := range values.Len() {
		opts := values.Get(i).Options()
		if opts == nil || !proto.HasExtension(opts, pipepb.E_MonitoringInfoSpec) {
			continue
		}
		spec, ok := proto.GetExtension(opts, pipepb.E_MonitoringInfoSpec).(*pipepb.MonitoringInfoSpec)
		if ok && spec.GetUrn() != "" && spec.GetType() != "" {
			m[spec.GetUrn()] = spec.GetType()
		}
	}
	return m
}()

// typeURN returns the beam_urn option of a MonitoringInfoTypeUrns value.
func typeURN(t pipepb.MonitoringInfoTypeUrns_Enum) string {
	v := t.Descriptor().Values().ByNumber(protoreflect.EnumNumber(t))
	if v == nil {
		return ""
	}
	s, _ := proto.GetExtension(v.Options(), pipepb.E_BeamUrn).(string)
	return s
}

// aggregate is a decoded payload and, once stored, the running combination of
// the payloads of one metric identity. merge never modifies its argument, so
// one decoded payload can be merged into several aggregates.
type aggregate interface {
	// merge folds o, which has the same concrete type, into the receiver.
	merge(o aggregate)
	// clone returns a copy that shares no mutable state with the receiver.
	clone() aggregate
	// payload encodes the aggregate in its type's payload encoding.
	payload() []byte
}

// decode parses payload according to the type URN typ. A payload of an
// unknown type is kept as is, and is never an error.
func decode(typ string, payload []byte) (aggregate, error) {
	r := &reader{buf: payload}
	switch typ {
	case typeSumInt64:
		v, err := r.varint()
		if err != nil {
			return nil, err
		}
		return &sumInt64{v: v}, r.done()
	case typeSumDouble:
		v, err := r.double()
		if err != nil {
			return nil, err
		}
		return &sumDouble{v: v}, r.done()
	case typeDistributionInt64:
		return decodeDistInt64(r)
	case typeDistributionFloat:
		return decodeDistDouble(r)
	case typeLatestInt64:
		ts, err := r.varint()
		if err != nil {
			return nil, err
		}
		v, err := r.varint()
		if err != nil {
			return nil, err
		}
		return &latestInt64{ts: ts, v: v}, r.done()
	case typeLatestDouble:
		ts, err := r.varint()
		if err != nil {
			return nil, err
		}
		v, err := r.double()
		if err != nil {
			return nil, err
		}
		return &latestDouble{ts: ts, v: v}, r.done()
	case typeSetString:
		ss, err := r.strings()
		if err != nil {
			return nil, err
		}
		set := make(map[string]struct{}, len(ss))
		for _, s := range ss {
			set[s] = struct{}{}
		}
		return &stringSet{set: set}, r.done()
	default:
		return &opaque{p: bytes.Clone(payload)}, nil
	}
}

// sumInt64 is beam:metrics:sum_int64:v1; values add.
type sumInt64 struct{ v int64 }

func (a *sumInt64) merge(o aggregate) { a.v += o.(*sumInt64).v }
func (a *sumInt64) clone() aggregate  { c := *a; return &c }
func (a *sumInt64) payload() []byte   { return appendVarint(nil, a.v) }

// sumDouble is beam:metrics:sum_double:v1; values add.
type sumDouble struct{ v float64 }

func (a *sumDouble) merge(o aggregate) { a.v += o.(*sumDouble).v }
func (a *sumDouble) clone() aggregate  { c := *a; return &c }
func (a *sumDouble) payload() []byte   { return appendDouble(nil, a.v) }

// distInt64 is beam:metrics:distribution_int64:v1. A distribution with a zero
// count is empty: its sum, min and max carry no information.
type distInt64 struct{ count, sum, min, max int64 }

func decodeDistInt64(r *reader) (aggregate, error) {
	count, err := r.varint()
	if err != nil {
		return nil, err
	}
	if count < 0 {
		return nil, errNegative
	}
	if count == 0 && len(r.buf) == 0 {
		// An empty distribution may be reported as its count alone.
		return &distInt64{}, nil
	}
	d := &distInt64{count: count}
	for _, p := range []*int64{&d.sum, &d.min, &d.max} {
		if *p, err = r.varint(); err != nil {
			return nil, err
		}
	}
	if count == 0 {
		d = &distInt64{}
	}
	return d, r.done()
}

func (a *distInt64) merge(o aggregate) {
	b := o.(*distInt64)
	switch {
	case b.count == 0:
	case a.count == 0:
		*a = *b
	default:
		a.count += b.count
		a.sum += b.sum
		a.min = min(a.min, b.min)
		a.max = max(a.max, b.max)
	}
}

func (a *distInt64) clone() aggregate { c := *a; return &c }

func (a *distInt64) payload() []byte {
	b := appendVarint(nil, a.count)
	b = appendVarint(b, a.sum)
	b = appendVarint(b, a.min)
	return appendVarint(b, a.max)
}

// distDouble is beam:metrics:distribution_double:v1: an integer count and
// floating point sum, min and max.
type distDouble struct {
	count         int64
	sum, min, max float64
}

func decodeDistDouble(r *reader) (aggregate, error) {
	count, err := r.varint()
	if err != nil {
		return nil, err
	}
	if count < 0 {
		return nil, errNegative
	}
	if count == 0 && len(r.buf) == 0 {
		return &distDouble{}, nil
	}
	d := &distDouble{count: count}
	for _, p := range []*float64{&d.sum, &d.min, &d.max} {
		if *p, err = r.double(); err != nil {
			return nil, err
		}
	}
	if count == 0 {
		d = &distDouble{}
	}
	return d, r.done()
}

func (a *distDouble) merge(o aggregate) {
	b := o.(*distDouble)
	switch {
	case b.count == 0:
	case a.count == 0:
		*a = *b
	default:
		a.count += b.count
		a.sum += b.sum
		a.min = min(a.min, b.min)
		a.max = max(a.max, b.max)
	}
}

func (a *distDouble) clone() aggregate { c := *a; return &c }

func (a *distDouble) payload() []byte {
	b := appendVarint(nil, a.count)
	b = appendDouble(b, a.sum)
	b = appendDouble(b, a.min)
	return appendDouble(b, a.max)
}

// latestInt64 is beam:metrics:latest_int64:v1, a gauge: the value with the
// latest timestamp (milliseconds since the epoch) wins; of equal timestamps,
// the one merged last.
type latestInt64 struct{ ts, v int64 }

func (a *latestInt64) merge(o aggregate) {
	if b := o.(*latestInt64); b.ts >= a.ts {
		*a = *b
	}
}

func (a *latestInt64) clone() aggregate { c := *a; return &c }

func (a *latestInt64) payload() []byte {
	return appendVarint(appendVarint(nil, a.ts), a.v)
}

// latestDouble is beam:metrics:latest_double:v1, a floating point gauge.
type latestDouble struct {
	ts int64
	v  float64
}

func (a *latestDouble) merge(o aggregate) {
	if b := o.(*latestDouble); b.ts >= a.ts {
		*a = *b
	}
}

func (a *latestDouble) clone() aggregate { c := *a; return &c }

func (a *latestDouble) payload() []byte {
	return appendDouble(appendVarint(nil, a.ts), a.v)
}

// stringSet is beam:metrics:set_string:v1; sets unite.
type stringSet struct{ set map[string]struct{} }

func (a *stringSet) merge(o aggregate) {
	for s := range o.(*stringSet).set {
		a.set[s] = struct{}{}
	}
}

func (a *stringSet) clone() aggregate {
	c := &stringSet{set: make(map[string]struct{}, len(a.set))}
	c.merge(a)
	return c
}

func (a *stringSet) payload() []byte {
	ss := make([]string, 0, len(a.set))
	for s := range a.set {
		ss = append(ss, s)
	}
	slices.Sort(ss)
	return appendStrings(nil, ss)
}

// opaque is a payload of a type the store does not know how to combine
// (top_n, bottom_n, progress, bounded tries, histograms, types it has never
// heard of): the payload merged last wins.
type opaque struct{ p []byte }

func (a *opaque) merge(o aggregate) { a.p = o.(*opaque).p }
func (a *opaque) clone() aggregate  { return &opaque{p: a.p} }
func (a *opaque) payload() []byte   { return bytes.Clone(a.p) }
