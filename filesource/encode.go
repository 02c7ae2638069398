package filesource

import (
	"encoding/binary"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/wire"
)

// noFiring is the pane of elements a source emits.
var noFiring = []byte{wire.PaneNoFiring}

// appendBytes appends b as Beam's bytes and string coders write it
// nested: its length, then the bytes.
func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// appendFileRow appends a windowed value of a file in ModeFiles: a row of
// fileio.FileSchema in Beam's row coding (beam:coder:row:v1: the field
// count, an empty null bitmap, then path as a string and size and
// modification time as int64 varints), length-prefixed because the
// runner's edges carry rows so (translate wraps coders it cannot measure).
func appendFileRow(dst []byte, path string, size int64, modMillis int64, ts mtime.Time) []byte {
	var row []byte
	row = binary.AppendUvarint(row, 3)
	row = append(row, 0)
	row = appendBytes(row, []byte(path))
	row = binary.AppendUvarint(row, uint64(size))
	row = binary.AppendUvarint(row, uint64(modMillis))
	return wire.AppendWindowedValue(dst, ts, nil, noFiring, appendBytes(nil, row))
}

// appendLine appends a windowed value of a line in ModeLines:
// KV<bytes, bytes> of the file's path and the line.
// The header is AppendWindowedValue's (one window, the global one, which
// encodes as nothing), written in place to spare a copy of the line.
func appendLine(dst []byte, path, line []byte, ts mtime.Time) []byte {
	dst = wire.AppendTime(dst, ts)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = append(dst, noFiring...)
	return appendBytes(appendBytes(dst, path), line)
}
