package fnapi

// frames gathers one output stream of a bundle as the SDK sends it: each
// data frame is kept as received (its bytes are the frame's own, not a
// buffer gRPC reuses) and they are joined once, when the bundle ends. A
// growing buffer would copy a large bundle's output about twice over and
// hold up to twice its size, and the runner keeps an SDF bundle's output
// until the bundle commits.
type frames struct {
	parts [][]byte
	n     int
}

func (f *frames) add(p []byte) {
	if len(p) == 0 {
		return
	}
	f.parts = append(f.parts, p)
	f.n += len(p)
}

// join returns the stream's bytes as one slice: the only frame itself, or
// one copy of all of them.
func (f *frames) join() []byte {
	switch len(f.parts) {
	case 0:
		return nil
	case 1:
		return f.parts[0]
	}
	b := make([]byte, 0, f.n)
	for _, p := range f.parts {
		b = append(b, p...)
	}
	f.parts = nil
	return b
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
