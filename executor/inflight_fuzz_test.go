package executor

import "testing"

// FuzzDecodeInFlight reads the in-flight data of an unaligned checkpoint
// as a restore finds it on disk: any bytes give batches or an error, never
// a panic or an allocation larger than the bytes, and batches read back
// the same after they are recorded again.
func FuzzDecodeInFlight(f *testing.F) {
	var rec inFlight
	rec.add(0, 1, [][]byte{[]byte("a"), {}})
	rec.add(3, 0, nil)
	f.Add(rec.buf)
	f.Add([]byte{0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	type batch struct {
		ch, port int
		elems    [][]byte
	}
	read := func(b []byte) ([]batch, error) {
		var out []batch
		err := DecodeInFlight(b, func(ch, port int, elems [][]byte) error {
			out = append(out, batch{ch, port, elems})
			return nil
		})
		return out, err
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := read(b)
		if err != nil {
			return
		}
		var again inFlight
		for _, bt := range got {
			if bt.ch < 0 || bt.port < 0 {
				// Beyond int: the restore refuses such a channel.
				return
			}
			again.add(bt.ch, bt.port, bt.elems)
		}
		back, err := read(again.buf)
		if err != nil || len(back) != len(got) {
			t.Fatalf("recorded again, %x reads as %v, %v; want %v", again.buf, back, err, got)
		}
		for i := range got {
			if back[i].ch != got[i].ch || back[i].port != got[i].port || len(back[i].elems) != len(got[i].elems) {
				t.Fatalf("batch %d: %v, want %v", i, back[i], got[i])
			}
			for j := range got[i].elems {
				if string(back[i].elems[j]) != string(got[i].elems[j]) {
					t.Fatalf("batch %d element %d: %q, want %q", i, j, back[i].elems[j], got[i].elems[j])
				}
			}
		}
	})
}
