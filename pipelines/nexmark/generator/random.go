package generator

// javaRandom is java.util.Random: Beam's generator seeds one with each
// event's id and draws the event's fields from it, so drawing the same
// numbers in the same order gives Beam Java's events. The algorithm is
// the linear congruential generator Random's documentation specifies
// (48-bit state, multiplier 0x5DEECE66D, increment 11), with int32
// arithmetic that wraps as Java's does.
type javaRandom struct {
	seed int64
}

const (
	randMultiplier = 0x5DEECE66D
	randMask       = 1<<48 - 1
)

func newJavaRandom(seed int64) javaRandom {
	return javaRandom{seed: (seed ^ randMultiplier) & randMask}
}

// next returns the next bits (at most 32) pseudo-random bits, as a signed
// int32 for bits == 32.
func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*randMultiplier + 0xB) & randMask
	return int32(r.seed >> (48 - bits))
}

// nextInt is Random.nextInt(): any int32.
func (r *javaRandom) nextInt() int32 { return r.next(32) }

// nextIntN is Random.nextInt(bound), uniform in [0, bound); bound must be
// positive (the callers' bounds come from validated configuration).
func (r *javaRandom) nextIntN(bound int32) int32 {
	v := r.next(31)
	m := bound - 1
	if bound&m == 0 { // a power of two
		return int32((int64(bound) * int64(v)) >> 31)
	}
	// Reject the values of the last, partial run of bound, as Java does;
	// u - v + m overflows to negative exactly for those.
	for u := v; ; u = r.next(31) {
		v = u % bound
		if u-v+m >= 0 {
			return v
		}
	}
}

// nextLong is Random.nextLong().
func (r *javaRandom) nextLong() int64 {
	hi := int64(r.next(32))
	return hi<<32 + int64(r.next(32))
}

// nextDouble is Random.nextDouble(), uniform in [0, 1) with 53 bits.
func (r *javaRandom) nextDouble() float64 {
	return float64(int64(r.next(26))<<27+int64(r.next(27))) * (1.0 / (1 << 53))
}

// nextLongN is Beam's LongGenerator.nextLong(random, n): nextInt(n) for n
// below 2^31-1, otherwise |nextLong() % n| (skewed, as Beam notes).
func (r *javaRandom) nextLongN(n int64) int64 {
	if n < 1<<31-1 {
		return int64(r.nextIntN(int32(n)))
	}
	v := r.nextLong() % n
	if v < 0 {
		v = -v
	}
	return v
}
