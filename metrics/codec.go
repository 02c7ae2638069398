package metrics

import (
	"encoding/binary"
	"errors"
	"math"
)

// The payload encodings of the MonitoringInfo types, as documented on
// pipepb.MonitoringInfoTypeUrns_Enum, are built from three Beam coders:
//
//   - beam:coder:varint:v1: an int64 reinterpreted as a uint64 and written as
//     an unsigned LEB128 varint (the encoding of encoding/binary's Uvarint);
//   - beam:coder:double:v1: the IEEE 754 bits of a float64, big endian;
//   - beam:coder:iterable:v1: a big-endian int32 element count followed by the
//     elements or, for iterables of unknown length, -1 followed by blocks of
//     a varint count and that many elements, ended by a zero count.
//
// Strings (beam:coder:stringutf8:v1) are a varint byte length and the bytes.
//
// The decoder below works on a byte slice and never allocates more than the
// payload holds, so a corrupt length cannot make it allocate without bound.

var (
	errShort    = errors.New("payload truncated")
	errVarint   = errors.New("varint overflows 64 bits")
	errTrailing = errors.New("unexpected bytes after the payload")
	errNegative = errors.New("negative count or length")
)

// reader decodes Beam coder values from a payload.
type reader struct {
	buf []byte
}

func (r *reader) varint() (int64, error) {
	v, n := binary.Uvarint(r.buf)
	switch {
	case n == 0:
		return 0, errShort
	case n < 0:
		return 0, errVarint
	}
	r.buf = r.buf[n:]
	return int64(v), nil
}

func (r *reader) double() (float64, error) {
	if len(r.buf) < 8 {
		return 0, errShort
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(r.buf))
	r.buf = r.buf[8:]
	return v, nil
}

func (r *reader) int32() (int32, error) {
	if len(r.buf) < 4 {
		return 0, errShort
	}
	v := int32(binary.BigEndian.Uint32(r.buf))
	r.buf = r.buf[4:]
	return v, nil
}

func (r *reader) string() (string, error) {
	n, err := r.varint()
	if err != nil {
		return "", err
	}
	if n < 0 {
		return "", errNegative
	}
	if n > int64(len(r.buf)) {
		return "", errShort
	}
	s := string(r.buf[:n])
	r.buf = r.buf[n:]
	return s, nil
}

// strings decodes an iterable of strings, in either of its two forms.
func (r *reader) strings() ([]string, error) {
	n, err := r.int32()
	if err != nil {
		return nil, err
	}
	var out []string
	if n >= 0 {
		for range n {
			s, err := r.string()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	if n != -1 {
		return nil, errNegative
	}
	for {
		block, err := r.varint()
		if err != nil {
			return nil, err
		}
		if block == 0 {
			return out, nil
		}
		if block < 0 {
			return nil, errNegative
		}
		for range block {
			s, err := r.string()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
}

// done reports an error if bytes remain after the payload was decoded.
func (r *reader) done() error {
	if len(r.buf) != 0 {
		return errTrailing
	}
	return nil
}

func appendVarint(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v))
}

func appendDouble(b []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(v))
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(ss)))
	for _, s := range ss {
		b = appendVarint(b, int64(len(s)))
		b = append(b, s...)
	}
	return b
}
