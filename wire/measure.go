package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// Coder URNs the runner understands at the byte level.
const (
	URNBytes          = "beam:coder:bytes:v1"
	URNStringUTF8     = "beam:coder:string_utf8:v1"
	URNVarInt         = "beam:coder:varint:v1"
	URNBool           = "beam:coder:bool:v1"
	URNDouble         = "beam:coder:double:v1"
	URNKV             = "beam:coder:kv:v1"
	URNIterable       = "beam:coder:iterable:v1"
	URNLengthPrefix   = "beam:coder:length_prefix:v1"
	URNWindowedValue  = "beam:coder:windowed_value:v1"
	URNGlobalWindow   = "beam:coder:global_window:v1"
	URNIntervalWindow = "beam:coder:interval_window:v1"
	URNNullable       = "beam:coder:nullable:v1"
	URNTimer          = "beam:coder:timer:v1"
)

// ErrShort reports an element cut off before its end.
var ErrShort = errors.New("wire: encoded element is truncated")

// Measure returns the length of the one encoded value at the start of b.
type Measure func(b []byte) (int, error)

// Known reports whether the runner can measure coder urn without help.
func Known(urn string) bool {
	switch urn {
	case URNBytes, URNStringUTF8, URNVarInt, URNBool, URNDouble, URNKV,
		URNIterable, URNLengthPrefix, URNWindowedValue, URNGlobalWindow,
		URNIntervalWindow, URNNullable, URNTimer:
		return true
	}
	return false
}

// MeasureFor builds the Measure of coder id in coders. Unknown coders are an
// error: the caller length-prefixes them first.
func MeasureFor(coders map[string]*pipepb.Coder, id string) (Measure, error) {
	c, ok := coders[id]
	if !ok {
		return nil, fmt.Errorf("wire: coder %q not in pipeline", id)
	}
	comp := func(i int) (Measure, error) {
		ids := c.GetComponentCoderIds()
		if i >= len(ids) {
			return nil, fmt.Errorf("wire: coder %q (%s) lacks component %d", id, c.GetSpec().GetUrn(), i)
		}
		return MeasureFor(coders, ids[i])
	}
	switch urn := c.GetSpec().GetUrn(); urn {
	case URNBytes, URNStringUTF8, URNLengthPrefix:
		return measureLengthPrefixed, nil
	case URNVarInt:
		return measureVarint, nil
	case URNBool:
		return fixed(1), nil
	case URNDouble:
		return fixed(8), nil
	case URNGlobalWindow:
		return fixed(0), nil
	case URNIntervalWindow:
		return measureIntervalWindow, nil
	case URNKV:
		k, err := comp(0)
		if err != nil {
			return nil, err
		}
		v, err := comp(1)
		if err != nil {
			return nil, err
		}
		return seq(k, v), nil
	case URNIterable:
		e, err := comp(0)
		if err != nil {
			return nil, err
		}
		return iterable(e), nil
	case URNNullable:
		e, err := comp(0)
		if err != nil {
			return nil, err
		}
		return nullable(e), nil
	case URNWindowedValue:
		v, err := comp(0)
		if err != nil {
			return nil, err
		}
		w, err := comp(1)
		if err != nil {
			return nil, err
		}
		return windowedValue(v, w), nil
	case URNTimer:
		k, err := comp(0)
		if err != nil {
			return nil, err
		}
		w, err := comp(1)
		if err != nil {
			return nil, err
		}
		return timer(k, w), nil
	default:
		return nil, fmt.Errorf("wire: coder %q has URN %s, which the runner cannot measure", id, urn)
	}
}

func fixed(n int) Measure {
	return func(b []byte) (int, error) {
		if len(b) < n {
			return 0, ErrShort
		}
		return n, nil
	}
}

func measureVarint(b []byte) (int, error) {
	_, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, ErrShort
	}
	return n, nil
}

func measureLengthPrefixed(b []byte) (int, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, ErrShort
	}
	if uint64(len(b)-n) < l {
		return 0, ErrShort
	}
	return n + int(l), nil
}

// An interval window is its end (8 bytes) and a varint duration.
func measureIntervalWindow(b []byte) (int, error) {
	if len(b) < 8 {
		return 0, ErrShort
	}
	n, err := measureVarint(b[8:])
	return 8 + n, err
}

func seq(ms ...Measure) Measure {
	return func(b []byte) (int, error) {
		off := 0
		for _, m := range ms {
			n, err := m(b[off:])
			if err != nil {
				return 0, err
			}
			off += n
		}
		return off, nil
	}
}

// Iterables are a 4-byte big-endian count, or -1 followed by varint-counted
// blocks ending in a zero count, or, for state-backed iterables, in a -1
// count and a length-prefixed token standing for the rest.
func iterable(e Measure) Measure {
	return func(b []byte) (int, error) {
		if len(b) < 4 {
			return 0, ErrShort
		}
		count := int32(binary.BigEndian.Uint32(b))
		off := 4
		if count >= 0 {
			for range count {
				n, err := e(b[off:])
				if err != nil {
					return 0, err
				}
				if n == 0 { // the rest measure the same bytes: no wider
					break
				}
				off += n
			}
			return off, nil
		}
		for {
			c, n := binary.Uvarint(b[off:])
			if n <= 0 {
				return 0, ErrShort
			}
			off += n
			if c == 0 {
				return off, nil
			}
			if c == stateBacked {
				n, err := measureLengthPrefixed(b[off:])
				return off + n, err
			}
			for range c {
				n, err := e(b[off:])
				if err != nil {
					return 0, err
				}
				if n == 0 { // the rest measure the same bytes: no wider
					break
				}
				off += n
			}
		}
	}
}

func nullable(e Measure) Measure {
	return func(b []byte) (int, error) {
		if len(b) < 1 {
			return 0, ErrShort
		}
		if b[0] == 0 {
			return 1, nil
		}
		n, err := e(b[1:])
		return 1 + n, err
	}
}

func windowedValue(v, w Measure) Measure {
	return func(b []byte) (int, error) {
		h, err := measureHeader(b, w)
		if err != nil {
			return 0, err
		}
		n, err := v(b[h:])
		return h + n, err
	}
}

// A timer is key, tag (string), windows, clear bit, and if set, fire
// timestamp, hold timestamp and pane.
func timer(k, w Measure) Measure {
	return func(b []byte) (int, error) {
		off, err := seq(k, measureLengthPrefixed)(b)
		if err != nil {
			return 0, err
		}
		n, err := measureWindows(b[off:], w)
		if err != nil {
			return 0, err
		}
		off += n
		if len(b) <= off {
			return 0, ErrShort
		}
		cleared := b[off] != 0
		off++
		if cleared {
			return off, nil
		}
		if len(b) < off+16 {
			return 0, ErrShort
		}
		off += 16
		n, err = measurePane(b[off:])
		return off + n, err
	}
}
