package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
)

// Timer is one element of Beam's timer coder (beam:coder:timer:v1): a
// user key, a dynamic tag, the windows, a clear bit and, unless cleared,
// the fire and hold timestamps and a pane. Every slice points into the
// decoded buffer.
type Timer struct {
	Key     []byte // encoded with the family's key coder
	Tag     []byte // the tag's UTF-8 bytes
	Windows []byte // the encoded window list: count, then each window
	Window  []byte // the first window
	Clear   bool
	Fire    mtime.Time
	Hold    mtime.Time
	Pane    []byte
	Raw     []byte // the whole encoded timer
}

// TimerCodec splits a stream of encoded timers.
type TimerCodec struct {
	Key, Window Measure
}

// Decode splits the timer at the start of b and returns its length.
func (c *TimerCodec) Decode(b []byte) (Timer, int, error) {
	var t Timer
	n, err := c.Key(b)
	if err != nil {
		return t, 0, fmt.Errorf("wire: timer key: %w", err)
	}
	t.Key = b[:n]
	off := n
	tagLen, w := binary.Uvarint(b[off:])
	if w <= 0 || uint64(len(b)-off-w) < tagLen {
		return t, 0, fmt.Errorf("wire: timer tag: %w", ErrShort)
	}
	off += w
	t.Tag = b[off : off+int(tagLen)]
	off += int(tagLen)
	n, err = measureWindows(b[off:], c.Window)
	if err != nil {
		return t, 0, fmt.Errorf("wire: timer windows: %w", err)
	}
	t.Windows = b[off : off+n]
	if len(t.Windows) > 4 {
		wn, err := c.Window(t.Windows[4:])
		if err != nil {
			return t, 0, err
		}
		t.Window = t.Windows[4 : 4+wn]
	} else {
		t.Window = t.Windows[4:]
	}
	off += n
	if len(b) <= off {
		return t, 0, fmt.Errorf("wire: timer clear bit: %w", ErrShort)
	}
	t.Clear = b[off] != 0
	off++
	if !t.Clear {
		if len(b) < off+16 {
			return t, 0, fmt.Errorf("wire: timer timestamps: %w", ErrShort)
		}
		t.Fire = DecodeTime(b[off:])
		t.Hold = DecodeTime(b[off+8:])
		off += 16
		n, err = measurePane(b[off:])
		if err != nil {
			return t, 0, fmt.Errorf("wire: timer pane: %w", err)
		}
		t.Pane = b[off : off+n]
		off += n
	}
	t.Raw = b[:off]
	return t, off, nil
}

// AppendTimer appends the encoding of a timer that is set (not cleared).
func AppendTimer(dst []byte, key, tag, windows []byte, fire, hold mtime.Time, pane []byte) []byte {
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(tag)))
	dst = append(dst, tag...)
	dst = append(dst, windows...)
	dst = append(dst, 0)
	dst = AppendTime(dst, fire)
	dst = AppendTime(dst, hold)
	return append(dst, pane...)
}
