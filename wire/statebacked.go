package wire

import (
	"encoding/binary"
	"math"
)

// stateBacked is the block count, a varint -1, that ends a state-backed
// iterable's inline blocks: a token for the rest follows.
const stateBacked = math.MaxUint64

// AppendStateBackedIterable appends an iterable of values, already
// encoded, followed by token, which stands for the values after them:
// Beam's state-backed iterable, whose reader asks the runner for the rest
// with a StateKey.Runner request carrying the token.
func AppendStateBackedIterable(dst []byte, values [][]byte, token []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32) // count -1: blocks follow
	if len(values) > 0 {                                     // a zero count would end the iterable
		dst = binary.AppendUvarint(dst, uint64(len(values)))
		for _, v := range values {
			dst = append(dst, v...)
		}
	}
	dst = binary.AppendUvarint(dst, stateBacked)
	dst = binary.AppendUvarint(dst, uint64(len(token)))
	return append(dst, token...)
}

// StateBackedToken returns the token of iter, an encoded iterable, if it
// is state-backed with a token of tokenLen bytes (under 128). The token
// ends the encoding, so only its start and end are looked at.
func StateBackedToken(iter []byte, tokenLen int) ([]byte, bool) {
	var tail [binary.MaxVarintLen64 + 1]byte
	t := binary.AppendUvarint(tail[:0], stateBacked)
	t = append(t, byte(tokenLen))
	n := len(t) + tokenLen
	if len(iter) < 4+n || binary.BigEndian.Uint32(iter) != math.MaxUint32 {
		return nil, false
	}
	if string(iter[len(iter)-n:len(iter)-tokenLen]) != string(t) {
		return nil, false
	}
	return iter[len(iter)-tokenLen:], true
}

// AppendResolvedIterable appends iter, a state-backed iterable with a
// token of tokenLen bytes (see StateBackedToken), with the token replaced
// by rest, the values it stands for, already encoded: the same iterable,
// read without the state API. It returns false, appending nothing, when
// iter is not state-backed.
func AppendResolvedIterable(dst, iter []byte, tokenLen int, rest [][]byte) ([]byte, bool) {
	token, ok := StateBackedToken(iter, tokenLen)
	if !ok {
		return dst, false
	}
	// Drop the token and its marker (the block count -1 and its length).
	end := len(iter) - len(token) - 1 - uvarintLen(stateBacked)
	dst = append(dst, iter[:end]...)
	if len(rest) > 0 { // a zero count would end the iterable
		dst = binary.AppendUvarint(dst, uint64(len(rest)))
		for _, v := range rest {
			dst = append(dst, v...)
		}
	}
	return binary.AppendUvarint(dst, 0), true
}

func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return len(binary.AppendUvarint(b[:0], v))
}

// HeaderLen returns the length of the windowed value header (timestamp,
// windows, pane) at the start of b.
func (c *Codec) HeaderLen(b []byte) (int, error) { return measureHeader(b, c.Window) }
