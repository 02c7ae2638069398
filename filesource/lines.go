package filesource

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/executor"
)

// readLines reads the current file from its offset to its end, emitting
// a KV<path, line> per line, Batch lines at a time, and moving the offset
// after each emission, so a snapshot between two (barriers enter between
// emissions) resumes at the first line not emitted. A line is what ends
// with "\n" (a "\r" before it is dropped too), or the file's last bytes.
// It leaves w.cur set if the job is drained mid-file.
func (w *watch) readLines(ctx context.Context, out *executor.Output, inj *executor.Injector, fsys fs.FS) error {
	c := w.cur
	name := w.fullPath(c.Path)
	f, err := fsys.Open(c.Path)
	if err != nil {
		// The file was removed (or made unreadable) after it was listed:
		// what is left of it cannot be read. Not silent: a warning.
		w.warnf("file watch %s: file %s is not read from byte %d on: %v", w.Name, name, c.Offset, err)
		w.cur = nil
		return nil
	}
	defer f.Close()
	if c.Offset > 0 {
		sk, ok := f.(io.Seeker)
		if !ok {
			return fmt.Errorf("file watch %s: file %s cannot seek to byte %d to resume", w.Name, name, c.Offset)
		}
		if _, err := sk.Seek(c.Offset, io.SeekStart); err != nil {
			return fmt.Errorf("file watch %s: file %s: resume at byte %d: %w", w.Name, name, c.Offset, err)
		}
	}
	r := bufio.NewReaderSize(f, 64<<10)
	key := []byte(name)
	ts := mtime.Time(c.Time)
	var buf []byte
	var ends []int
	read := c.Offset
	for {
		line, err := r.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("file watch %s: read %s at byte %d: %w", w.Name, name, read, err)
		}
		if len(line) > 0 {
			read += int64(len(line))
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			buf = appendLine(buf, key, line, ts)
			ends = append(ends, len(buf))
		}
		eof := err != nil
		if len(ends) >= w.batch() || eof && len(ends) > 0 {
			if err := out.Emit(ctx, 0, split(buf, ends)); err != nil {
				return err
			}
			c.Offset, buf, ends = read, nil, ends[:0]
			if _, err := inj.Poll(); err != nil {
				return err
			}
			if !eof && w.drained() {
				return nil
			}
		}
		if eof {
			w.cur = nil
			return nil
		}
	}
}

// split cuts buf at ends into elements.
func split(buf []byte, ends []int) [][]byte {
	out := make([][]byte, len(ends))
	start := 0
	for i, e := range ends {
		out[i] = buf[start:e:e]
		start = e
	}
	return out
}
