package fnapi

// Frames is one output stream of a bundle as the SDK sent it: its data
// frames in order, each the frame's own bytes (not a buffer gRPC reuses).
// An element may begin in one frame and end in a later one. The runner
// cuts elements out of the frames where they lie; joining them would hold
// a large bundle's output twice at once.
type Frames [][]byte

// Len returns the stream's bytes.
func (f Frames) Len() int {
	n := 0
	for _, p := range f {
		n += len(p)
	}
	return n
}

// Bytes returns the stream as one slice: the only frame itself, or one
// copy of all of them.
func (f Frames) Bytes() []byte {
	switch len(f) {
	case 0:
		return nil
	case 1:
		return f[0]
	}
	b := make([]byte, 0, f.Len())
	for _, p := range f {
		b = append(b, p...)
	}
	return b
}

// frames gathers one output stream of a bundle as the SDK sends it, and
// counts its bytes (Buffered, OutputLimit).
type frames struct {
	parts Frames
	n     int
}

func (f *frames) add(p []byte) {
	if len(p) == 0 {
		return
	}
	f.parts = append(f.parts, p)
	f.n += len(p)
}

// nextFrame returns how many of els go in the next frame, and their bytes:
// as many as fit in maxFrame, or the first alone when it is larger, so the
// frame is allocated once at its size.
func nextFrame(els [][]byte) (n, size int) {
	for _, e := range els {
		if n > 0 && size+len(e) > maxFrame {
			break
		}
		n, size = n+1, size+len(e)
	}
	return n, size
}
