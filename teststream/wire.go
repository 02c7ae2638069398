package teststream

import (
	"encoding/binary"
	"fmt"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/wire"
)

// wireCoders re-encodes TestStream elements into the runner's wire
// encoding.
type wireCoders struct {
	coders map[string]*pipepb.Coder
}

// measurable reports whether the wire coder of id is id itself: the
// runner measures it and every component (a length prefix it measures
// whatever it holds). Otherwise translate wraps the parts it cannot
// measure in length prefixes.
func (w wireCoders) measurable(id string) bool {
	c := w.coders[id]
	switch urn := c.GetSpec().GetUrn(); {
	case urn == wire.URNLengthPrefix:
		return true
	case !wire.Known(urn):
		return false
	}
	for _, cc := range c.GetComponentCoderIds() {
		if !w.measurable(cc) {
			return false
		}
	}
	return true
}

// sdkBase is the capability by which an environment names its SDK, as
// beam:version:sdk_base:apache/beam_java17_sdk:2.73.0.
const sdkBase = "beam:version:sdk_base:"

// encodesOuter says the pipeline's SDK writes TestStream elements in the
// outer context: Java (CoderUtils.encodeToByteArray) and Python
// (coder.encode) do, so a string or bytes element there has no length
// and a KV's value is outer too; the Go SDK writes them nested. Which SDK
// it is comes from its environments' sdk_base capability: trying both
// decodings would not do, since "\x01a" is "\x01a" outer and "a" nested.
// A pipeline with a Go environment, or none that names its SDK, is read
// nested.
func encodesOuter(comps *pipepb.Components) bool {
	outer := false
	for _, env := range comps.GetEnvironments() {
		for _, c := range env.GetCapabilities() {
			sdk, ok := strings.CutPrefix(c, sdkBase)
			switch {
			case !ok:
			case strings.Contains(sdk, "_go_"):
				return false
			case strings.Contains(sdk, "_java"), strings.Contains(sdk, "_python"):
				outer = true
			}
		}
	}
	return outer
}

// wireValue re-encodes an element encoded with pipeline coder id into the
// encoding of the runner's wire coder for id: id with every coder the
// runner cannot measure length-prefixed, as translate makes it. The element must be
// exactly one value: bytes left over or missing are an error, so that a
// payload written in another context than outer says is refused rather
// than misread. In the outer context, bytes and strings take all of e and
// a KV's value is outer; other coders weir measures read the same in both.
func (w wireCoders) value(id string, e []byte, outer bool) ([]byte, error) {
	c := w.coders[id]
	urn := c.GetSpec().GetUrn()
	if outer && (urn == wire.URNBytes || urn == wire.URNStringUTF8) {
		return append(binary.AppendUvarint(make([]byte, 0, len(e)+binary.MaxVarintLen64), uint64(len(e))), e...), nil
	}
	same := w.measurable(id)
	if outer && same && urn == wire.URNKV && len(c.GetComponentCoderIds()) == 2 {
		same = false // the value may differ: the KV case below
	}
	switch {
	case same:
		m, err := wire.MeasureFor(w.coders, id)
		if err != nil {
			return nil, err
		}
		n, err := m(e)
		if err != nil {
			return nil, fmt.Errorf("does not decode with coder %q (%s): %w", id, urn, err)
		}
		if n != len(e) {
			return nil, fmt.Errorf("coder %q (%s) reads %d of its %d bytes", id, urn, n, len(e))
		}
		return e, nil
	case !wire.Known(urn):
		// lp wrapped the whole coder: the element is all of e.
		return append(binary.AppendUvarint(make([]byte, 0, len(e)+binary.MaxVarintLen64), uint64(len(e))), e...), nil
	case urn == wire.URNKV && len(c.GetComponentCoderIds()) == 2:
		k := c.GetComponentCoderIds()[0]
		if !w.measurable(k) {
			return nil, fmt.Errorf("key coder %q (%s) is one weir cannot measure", k, w.coders[k].GetSpec().GetUrn())
		}
		m, err := wire.MeasureFor(w.coders, k)
		if err != nil {
			return nil, err
		}
		n, err := m(e)
		if err != nil {
			return nil, fmt.Errorf("key does not decode with coder %q: %w", k, err)
		}
		v, err := w.value(c.GetComponentCoderIds()[1], e[n:], outer)
		if err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		return append(e[:n:n], v...), nil
	default:
		return nil, fmt.Errorf("coder %q (%s) has a component weir cannot measure; only a KV's value may be unknown", id, urn)
	}
}
