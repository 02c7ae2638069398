package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

func coders() map[string]*pipepb.Coder {
	c := func(urn string, comps ...string) *pipepb.Coder {
		return &pipepb.Coder{Spec: &pipepb.FunctionSpec{Urn: urn}, ComponentCoderIds: comps}
	}
	return map[string]*pipepb.Coder{
		"bytes":  c(URNBytes),
		"str":    c(URNStringUTF8),
		"vi":     c(URNVarInt),
		"bool":   c(URNBool),
		"dbl":    c(URNDouble),
		"custom": c("beam:go:coder:custom:v1"),
		"lp":     c(URNLengthPrefix, "custom"),
		"kv":     c(URNKV, "str", "vi"),
		"it":     c(URNIterable, "str"),
		"kvit":   c(URNKV, "str", "it"),
		"null":   c(URNNullable, "vi"),
		"gw":     c(URNGlobalWindow),
		"iw":     c(URNIntervalWindow),
		"wv":     c(URNWindowedValue, "kv", "iw"),
		"bad":    c(URNKV, "str"),
	}
}

func TestMeasure(t *testing.T) {
	cs := coders()
	tests := []struct {
		coder string
		in    []byte
		want  int
		err   bool
	}{
		{"bytes", []byte{3, 'a', 'b', 'c', 9}, 4, false},
		{"bytes", []byte{3, 'a'}, 0, true},
		{"str", []byte{0}, 1, false},
		{"vi", []byte{0x80, 0x01, 7}, 2, false},
		{"vi", []byte{0x80}, 0, true},
		{"bool", []byte{1, 1}, 1, false},
		{"dbl", make([]byte, 9), 8, false},
		{"lp", []byte{2, 0xff, 0xff, 1}, 3, false},
		{"kv", []byte{1, 'k', 5}, 3, false},
		{"it", []byte{0, 0, 0, 2, 1, 'a', 1, 'b'}, 8, false},
		{"it", []byte{0xff, 0xff, 0xff, 0xff, 1, 1, 'a', 2, 1, 'b', 0, 0, 9}, 12, false},
		{"it", []byte{0, 0, 0, 2, 1, 'a'}, 0, true},
		{"null", []byte{0}, 1, false},
		{"null", []byte{1, 5}, 2, false},
		{"gw", nil, 0, false},
		{"iw", append(make([]byte, 8), 0x80, 0x01), 10, false},
	}
	for _, tc := range tests {
		m, err := MeasureFor(cs, tc.coder)
		if err != nil {
			t.Fatalf("MeasureFor(%s): %v", tc.coder, err)
		}
		got, err := m(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("%s % x: got %d, %v; want %d, err=%v", tc.coder, tc.in, got, err, tc.want, tc.err)
		}
	}
	for _, id := range []string{"custom", "bad", "missing"} {
		if _, err := MeasureFor(cs, id); err == nil {
			t.Errorf("MeasureFor(%s) succeeded, want an error", id)
		}
	}
}

// TestDecodeMatchesSDK decodes windowed values that the Go SDK itself
// encoded, and checks that re-encoding the parts gives the same bytes.
func TestDecodeMatchesSDK(t *testing.T) {
	cs := coders()
	win, _ := MeasureFor(cs, "iw")
	val, _ := MeasureFor(cs, "kv")
	key, _ := MeasureFor(cs, "str")
	codec := NewCodec(win, val)

	iw := window.IntervalWindow{Start: 1000, End: 2000}
	panes := []typex.PaneInfo{
		typex.NoFiringPane(),
		{Timing: typex.PaneOnTime, IsFirst: true, IsLast: true},
		{Timing: typex.PaneLate, Index: 3, NonSpeculativeIndex: 2},
		{Timing: typex.PaneEarly, Index: 1, NonSpeculativeIndex: -1},
	}
	for _, pane := range panes {
		var buf bytes.Buffer
		we := exec.MakeWindowEncoder(coder.NewIntervalWindow())
		if err := exec.EncodeWindowedValueHeader(we, []typex.Window{iw}, mtime.FromMilliseconds(1500), pane, &buf); err != nil {
			t.Fatal(err)
		}
		value := []byte{2, 'h', 'i', 0x2a}
		buf.Write(value)
		enc := append(buf.Bytes(), 0xEE) // a following element's first byte
		wv, n, err := codec.Decode(enc, nil)
		if err != nil {
			t.Fatalf("pane %+v: %v", pane, err)
		}
		if n != len(enc)-1 || wv.Timestamp != 1500 || !bytes.Equal(wv.Value, value) || len(wv.Windows) != 1 {
			t.Fatalf("pane %+v: decoded %+v (n=%d)", pane, wv, n)
		}
		if WindowMaxTimestamp(wv.Windows[0]) != 1999 {
			t.Errorf("window max timestamp %v, want 1999", WindowMaxTimestamp(wv.Windows[0]))
		}
		if got, err := codec.ValueOf(enc); err != nil || !bytes.Equal(got, value) {
			t.Errorf("ValueOf = % x, %v; want % x", got, err, value)
		}
		k, v, err := SplitKV(key, wv.Value)
		if err != nil || string(k) != "\x02hi" || !bytes.Equal(v, []byte{0x2a}) {
			t.Errorf("SplitKV = %q, %q, %v", k, v, err)
		}
		re := AppendWindowedValue(nil, wv.Timestamp, wv.Windows[0], wv.Pane, wv.Value)
		if !bytes.Equal(re, enc[:n]) {
			t.Errorf("pane %+v: re-encoded % x, want % x", pane, re, enc[:n])
		}
	}
	if _, _, err := codec.Decode([]byte{1, 2, 3}, nil); !errors.Is(err, ErrShort) {
		t.Errorf("short input: %v, want ErrShort", err)
	}
}

func TestGlobalWindowMaxTimestamp(t *testing.T) {
	if got := WindowMaxTimestamp(nil); got != mtime.EndOfGlobalWindowTime {
		t.Errorf("global window max timestamp %v", got)
	}
}

func TestTimerRoundTrip(t *testing.T) {
	c := &TimerCodec{Key: measureLengthPrefixed, Window: measureIntervalWindow}
	win := AppendIntervalWindow(nil, 0, 10)
	windows := append([]byte{0, 0, 0, 1}, win...)
	set := AppendTimer(nil, []byte{2, 'k', '1'}, []byte("tag"), windows, 7, 5, []byte{0x0f})
	cleared := append([]byte{1, 'z', 0}, windows...)
	cleared = append(cleared, 1)
	stream := append(append([]byte(nil), set...), cleared...)

	tm, n, err := c.Decode(stream)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(set) || string(tm.Key) != "\x02k1" || string(tm.Tag) != "tag" || tm.Clear ||
		tm.Fire != 7 || tm.Hold != 5 || string(tm.Window) != string(win) || len(tm.Pane) != 1 {
		t.Fatalf("decoded %+v (n=%d)", tm, n)
	}
	tm, n, err = c.Decode(stream[n:])
	if err != nil {
		t.Fatal(err)
	}
	if !tm.Clear || string(tm.Key) != "\x01z" || len(tm.Tag) != 0 || n != len(cleared) {
		t.Fatalf("cleared timer decoded %+v (n=%d)", tm, n)
	}
	if _, _, err := c.Decode(set[:len(set)-3]); err == nil {
		t.Fatal("a cut-off timer decoded without error")
	}
}

// TestStateBackedIterable checks a state-backed iterable measures to its
// end and gives back its token, and that ordinary iterables have none.
func TestStateBackedIterable(t *testing.T) {
	m, err := MeasureFor(coders(), "kvit")
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	token := []byte("token-123")
	for _, inline := range [][][]byte{nil, {str("a"), str("bc")}} {
		kv := AppendStateBackedIterable(str("key"), inline, token)
		kv = append(kv, "next element"...)
		n, err := m(kv)
		if err != nil || n != len(kv)-len("next element") {
			t.Fatalf("%d inline: measured %d, %v; want %d", len(inline), n, err, len(kv)-len("next element"))
		}
		got, ok := StateBackedToken(kv[4:n], len(token))
		if !ok || string(got) != string(token) {
			t.Errorf("%d inline: token %q, %v; want %q", len(inline), got, ok, token)
		}
	}
	// Resolved, with the values the token stands for, it is the same
	// iterable without one: all values, in order, then the end.
	it := func(vals ...[]byte) [][]byte { return vals }
	for _, inline := range [][][]byte{nil, it(str("a"), str("bc"))} {
		for _, rest := range [][][]byte{nil, it(str("d")), it(str("e"), str("fgh"))} {
			iter := AppendStateBackedIterable(nil, inline, token)
			got, ok := AppendResolvedIterable([]byte("x"), iter, len(token), rest)
			if !ok {
				t.Fatalf("%q + %q: not resolved", inline, rest)
			}
			kv := append(str("key"), got[1:]...)
			if n, err := m(kv); err != nil || n != len(kv) {
				t.Errorf("%q + %q: measured %d of %d, %v", inline, rest, n, len(kv), err)
			}
			if _, ok := StateBackedToken(got[1:], len(token)); ok {
				t.Errorf("%q + %q: still state-backed", inline, rest)
			}
			var vals []string
			for b := got[5:]; len(b) > 0; {
				c, n := binary.Uvarint(b)
				b = b[n:]
				for range c {
					vals = append(vals, string(b[1:1+b[0]]))
					b = b[1+b[0]:]
				}
			}
			want := []string{}
			for _, v := range append(slices.Clone(inline), rest...) {
				want = append(want, string(v[1:]))
			}
			if strings.Join(vals, ",") != strings.Join(want, ",") || got[0] != 'x' {
				t.Errorf("%q + %q: resolved to %q, want %q after the prefix", inline, rest, vals, want)
			}
		}
	}
	if _, ok := AppendResolvedIterable(nil, binary.BigEndian.AppendUint32(nil, 0), len(token), nil); ok {
		t.Error("a plain iterable was resolved")
	}
	// A plain iterable whose last value happens to end like a token.
	plain := binary.BigEndian.AppendUint32(nil, 1)
	plain = append(plain, str(string(AppendStateBackedIterable(nil, nil, token)[4:]))...)
	if _, ok := StateBackedToken(plain, len(token)); ok {
		t.Error("a plain iterable was taken for a state-backed one")
	}
}
