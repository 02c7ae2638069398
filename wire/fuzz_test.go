package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// fuzzCoders are the coders the fuzz targets measure: those of wire_test.go
// and the shapes that repeat elements of no width (global windows), which
// are what a huge count turns into a long loop.
func fuzzCoders() (map[string]*pipepb.Coder, []string) {
	cs := coders()
	c := func(urn string, comps ...string) *pipepb.Coder {
		return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	}
	cs["itgw"] = c(URNIterable, "gw")
	cs["wvgw"] = c(URNWindowedValue, "bytes", "gw")
	cs["timer"] = c(URNTimer, "str", "iw")
	cs["timergw"] = c(URNTimer, "bytes", "gw")
	ids := []string{"bytes", "str", "vi", "bool", "dbl", "lp", "kv", "it", "kvit", "null",
		"gw", "iw", "wv", "itgw", "wvgw", "timer", "timergw"}
	return cs, ids
}

// FuzzMeasure checks that no input panics or hangs a measure, that a
// measured length lies within the input, and that the measured prefix
// alone measures the same: an element's length depends on its own bytes.
func FuzzMeasure(f *testing.F) {
	cs, ids := fuzzCoders()
	ms := make([]Measure, len(ids))
	for i, id := range ids {
		m, err := MeasureFor(cs, id)
		if err != nil {
			f.Fatalf("MeasureFor(%s): %v", id, err)
		}
		ms[i] = m
	}
	f.Add(uint8(6), []byte{1, 'k', 5})
	f.Add(uint8(7), []byte{0xff, 0xff, 0xff, 0xff, 1, 1, 'a', 2, 1, 'b', 0, 0, 9})
	f.Add(uint8(13), []byte{0, 0, 0, 3})
	f.Add(uint8(14), append(make([]byte, 8), 0, 0, 0, 1, 0x0f, 1, 'v'))
	f.Fuzz(func(t *testing.T, sel uint8, b []byte) {
		i := int(sel) % len(ms)
		n, err := ms[i](b)
		if err != nil {
			return
		}
		if n < 0 || n > len(b) {
			t.Fatalf("%s: measured %d of %d bytes", ids[i], n, len(b))
		}
		if m, err := ms[i](b[:n]); err != nil || m != n {
			t.Fatalf("%s: prefix %x measures %d, %v; the whole input measured %d", ids[i], b[:n], m, err, n)
		}
	})
}

// FuzzDecode checks the windowed value codec on interval and global
// windows: no panics; Decode, Measure, ValueOf and HeaderLen agree; and an
// element in one window re-encodes to its own bytes.
func FuzzDecode(f *testing.F) {
	cs, _ := fuzzCoders()
	must := func(id string) Measure {
		m, err := MeasureFor(cs, id)
		if err != nil {
			f.Fatal(err)
		}
		return m
	}
	codecs := []*Codec{NewCodec(must("iw"), must("kv")), NewCodec(must("gw"), must("bytes"))}
	f.Add(uint8(0), AppendWindowedValue(nil, 5, AppendIntervalWindow(nil, 0, 10), []byte{PaneNoFiring}, []byte{1, 'k', 3}))
	f.Add(uint8(1), AppendWindowedValue(nil, mtime.MinTimestamp, nil, []byte{PaneOnTimeOnly}, []byte{2, 'a', 'b'}))
	f.Add(uint8(1), append(AppendTime(nil, 0), 0xff, 0xff, 0xff, 0xff, 0x0f, 0))
	f.Fuzz(func(t *testing.T, sel uint8, b []byte) {
		c := codecs[int(sel)%len(codecs)]
		wv, n, err := c.Decode(b, nil)
		m, merr := c.Measure(b)
		if err != nil {
			return
		}
		if merr != nil || m != n {
			t.Fatalf("Decode took %d bytes of %x, Measure %d, %v", n, b, m, merr)
		}
		v, err := c.ValueOf(b)
		if err != nil || !bytes.Equal(v, wv.Value) {
			t.Fatalf("ValueOf(%x) = %x, %v; Decode's value %x", b, v, err, wv.Value)
		}
		h, err := c.HeaderLen(b)
		if err != nil || h != n-len(wv.Value) {
			t.Fatalf("HeaderLen(%x) = %d, %v; want %d", b, h, err, n-len(wv.Value))
		}
		if len(wv.Windows) == 1 {
			if got := AppendWindowedValue(nil, wv.Timestamp, wv.Windows[0], wv.Pane, wv.Value); !bytes.Equal(got, b[:n]) {
				t.Fatalf("re-encoded %x as %x", b[:n], got)
			}
		}
	})
}

// FuzzTimer checks the timer codec: no panics, Decode agrees with the
// timer coder's Measure, and a set timer re-encodes to the same fields.
func FuzzTimer(f *testing.F) {
	cs, _ := fuzzCoders()
	key, _ := MeasureFor(cs, "str")
	iw, _ := MeasureFor(cs, "iw")
	m, err := MeasureFor(cs, "timer")
	if err != nil {
		f.Fatal(err)
	}
	tc := &TimerCodec{Key: key, Window: iw}
	windows := binary.BigEndian.AppendUint32(nil, 1)
	windows = AppendIntervalWindow(windows, 0, 100)
	f.Add(AppendTimer(nil, []byte{1, 'k'}, []byte("tag"), windows, 99, 50, []byte{PaneNoFiring}))
	f.Add(append([]byte{1, 'k', 0, 0, 0, 0, 0}, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		tm, n, err := tc.Decode(b)
		if err != nil {
			return
		}
		if got, err := m(b); err != nil || got != n {
			t.Fatalf("Decode took %d bytes of %x, Measure %d, %v", n, b, got, err)
		}
		if !bytes.Equal(tm.Raw, b[:n]) {
			t.Fatalf("Raw %x, want %x", tm.Raw, b[:n])
		}
		if !tm.Clear {
			// Decoding takes varints that are not the shortest (as Beam's
			// coders do), so the bytes may differ: the fields may not.
			re := AppendTimer(nil, tm.Key, tm.Tag, tm.Windows, tm.Fire, tm.Hold, tm.Pane)
			back, _, err := tc.Decode(re)
			if err != nil {
				t.Fatalf("re-encoded %x as %x, which does not decode: %v", tm.Raw, re, err)
			}
			if !bytes.Equal(back.Key, tm.Key) || !bytes.Equal(back.Tag, tm.Tag) || !bytes.Equal(back.Windows, tm.Windows) ||
				back.Fire != tm.Fire || back.Hold != tm.Hold || !bytes.Equal(back.Pane, tm.Pane) || back.Clear {
				t.Fatalf("re-encoded %x as %x, which decodes to other fields", tm.Raw, re)
			}
		}
	})
}

// FuzzRoundTrip checks the encoders against their decoders: timestamps,
// interval windows, and state-backed iterables' tokens.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int64(0), int64(10), []byte{1, 'a', 1, 'b'}, []byte("tok"))
	f.Add(int64(mtime.MinTimestamp), int64(mtime.MaxTimestamp), []byte(nil), []byte(nil))
	f.Fuzz(func(t *testing.T, start, end int64, values, token []byte) {
		if got := DecodeTime(AppendTime(nil, mtime.Time(start))); got != mtime.Time(start) {
			t.Fatalf("time %d round-trips as %d", start, got)
		}
		_, _, _ = DecodeIntervalWindow(values) // arbitrary bytes must not panic
		s, e, err := DecodeIntervalWindow(AppendIntervalWindow(nil, mtime.Time(start), mtime.Time(end)))
		if err != nil || s != mtime.Time(start) || e != mtime.Time(end) {
			t.Fatalf("window [%d, %d) round-trips as [%d, %d), %v", start, end, s, e, err)
		}
		if len(token) >= 128 {
			token = token[:127]
		}
		vals := [][]byte{}
		if len(values) > 0 {
			vals = append(vals, values)
		}
		iter := AppendStateBackedIterable(nil, vals, token)
		if got, ok := StateBackedToken(iter, len(token)); !ok || !bytes.Equal(got, token) {
			t.Fatalf("token %x round-trips as %x, %v", token, got, ok)
		}
		StateBackedToken(values, int(uint8(start))%128) // arbitrary bytes must not panic
	})
}
