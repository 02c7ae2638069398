package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// Pane bytes the runner writes. The low nibble holds first (1), last (2) and
// timing (bits 2-3: early 0, on time 1, late 2, unknown 3); a high nibble of
// zero means both indexes are zero.
const (
	PaneNoFiring   byte = 0x0F // first, last, unknown timing: as produced by sources
	PaneOnTimeOnly byte = 0x07 // first, last, on time: the single pane of a batch GBK
)

// WindowedValue is an element split into its header fields, each a slice of
// the encoded bytes it came from.
type WindowedValue struct {
	Timestamp mtime.Time
	Windows   [][]byte // each window's encoding
	Pane      []byte
	Value     []byte
}

// Codec splits and builds the windowed values of one PCollection.
type Codec struct {
	Window Measure
	Value  Measure
}

// NewCodec returns the codec of windowed values with the given measures.
func NewCodec(window, value Measure) *Codec { return &Codec{Window: window, Value: value} }

// Measure returns the length of the element at the start of b.
func (c *Codec) Measure(b []byte) (int, error) {
	return windowedValue(c.Value, c.Window)(b)
}

// Decode splits the element at the start of b. windows is reused for the
// result's Windows when it has capacity.
func (c *Codec) Decode(b []byte, windows [][]byte) (WindowedValue, int, error) {
	var wv WindowedValue
	if len(b) < 12 {
		return wv, 0, ErrShort
	}
	wv.Timestamp = DecodeTime(b)
	off := 8
	count := int(binary.BigEndian.Uint32(b[off:]))
	off += 4
	if count < 0 || count > len(b) {
		return wv, 0, fmt.Errorf("wire: window count %d is out of range", count)
	}
	wv.Windows = windows[:0]
	for range count {
		n, err := c.Window(b[off:])
		if err != nil {
			return wv, 0, err
		}
		wv.Windows = append(wv.Windows, b[off:off+n])
		off += n
	}
	n, err := measurePane(b[off:])
	if err != nil {
		return wv, 0, err
	}
	wv.Pane = b[off : off+n]
	off += n
	n, err = c.Value(b[off:])
	if err != nil {
		return wv, 0, err
	}
	wv.Value = b[off : off+n]
	return wv, off + n, nil
}

// AppendWindowedValue appends the encoding of an element in one window.
func AppendWindowedValue(dst []byte, ts mtime.Time, window, pane, value []byte) []byte {
	dst = AppendTime(dst, ts)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = append(dst, window...)
	dst = append(dst, pane...)
	return append(dst, value...)
}

// AppendTime appends a timestamp as Beam encodes it: milliseconds shifted by
// MinInt64 so that byte order is time order.
func AppendTime(dst []byte, t mtime.Time) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(int64(t)-math.MinInt64))
}

// DecodeTime reads a timestamp written by AppendTime. b holds at least 8 bytes.
func DecodeTime(b []byte) mtime.Time {
	return mtime.Time(int64(binary.BigEndian.Uint64(b)) + math.MinInt64)
}

// WindowMaxTimestamp returns the last timestamp inside an encoded window:
// the end of time for the global window (empty encoding), end-1 for an
// interval window.
func WindowMaxTimestamp(w []byte) mtime.Time {
	if len(w) < 8 {
		return mtime.EndOfGlobalWindowTime
	}
	return DecodeTime(w) - 1
}

func measureHeader(b []byte, w Measure) (int, error) {
	if len(b) < 8 {
		return 0, ErrShort
	}
	n, err := measureWindows(b[8:], w)
	if err != nil {
		return 0, err
	}
	off := 8 + n
	n, err = measurePane(b[off:])
	return off + n, err
}

func measureWindows(b []byte, w Measure) (int, error) {
	if len(b) < 4 {
		return 0, ErrShort
	}
	count := int(binary.BigEndian.Uint32(b))
	off := 4
	for range count {
		n, err := w(b[off:])
		if err != nil {
			return 0, err
		}
		if n == 0 { // global windows: the rest are empty too
			break
		}
		off += n
	}
	return off, nil
}

// A pane is one byte whose high nibble says how many varint indexes follow.
func measurePane(b []byte) (int, error) {
	if len(b) < 1 {
		return 0, ErrShort
	}
	off := 1
	for range int(b[0] >> 4) {
		n, err := measureVarint(b[off:])
		if err != nil {
			return 0, err
		}
		off += n
	}
	return off, nil
}

// SplitKV splits a KV value into key and value bytes.
func SplitKV(key Measure, b []byte) (k, v []byte, err error) {
	n, err := key(b)
	if err != nil {
		return nil, nil, fmt.Errorf("wire: key: %w", err)
	}
	return b[:n], b[n:], nil
}

// DecodeIntervalWindow reads an interval window: its end, then its length
// as an unsigned varint.
func DecodeIntervalWindow(b []byte) (start, end mtime.Time, err error) {
	if len(b) < 9 {
		return 0, 0, ErrShort
	}
	end = DecodeTime(b)
	d, n := binary.Uvarint(b[8:])
	if n <= 0 {
		return 0, 0, ErrShort
	}
	return end - mtime.Time(d), end, nil
}

// AppendIntervalWindow appends the encoding of the window [start, end).
func AppendIntervalWindow(dst []byte, start, end mtime.Time) []byte {
	dst = AppendTime(dst, end)
	return binary.AppendUvarint(dst, uint64(end-start))
}

// ValueOf returns the value of the element at the start of b, skipping its
// header without decoding it; it does not allocate.
func (c *Codec) ValueOf(b []byte) ([]byte, error) {
	h, err := measureHeader(b, c.Window)
	if err != nil {
		return nil, err
	}
	n, err := c.Value(b[h:])
	if err != nil {
		return nil, err
	}
	return b[h : h+n], nil
}
