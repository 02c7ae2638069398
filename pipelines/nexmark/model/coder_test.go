package model

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
)

var samples = []Event{
	{NewPerson: &Person{ID: 1000, Name: "Peter Jones", EmailAddress: "nhq@ov.com", CreditCard: "0001 2345 6789 0123",
		City: "Kent", State: "WA", DateTime: 1436918400000, Extra: "xyz"}},
	{NewAuction: &Auction{ID: 1000, ItemName: "item", Description: "a thing", InitialBid: 123, Reserve: 4567,
		DateTime: 1436918400010, Expires: 1436918410010, Seller: 1000, Category: 10, Extra: ""}},
	{Bid: &Bid{Auction: 1000, Bidder: 1001, Price: 100, DateTime: 1436918400020, Extra: "é\x00"}},
	{Bid: &Bid{Auction: math.MinInt64, Bidder: math.MaxInt64, Price: -1}},
}

func TestEventRoundTrip(t *testing.T) {
	for _, e := range samples {
		b := AppendEvent(nil, e)
		got, err := DecodeEvent(b)
		if err != nil {
			t.Fatalf("%v: %v", e, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("round trip of %v gave %v", e, got)
		}
		if again := AppendEvent(nil, got); !bytes.Equal(again, b) {
			t.Errorf("%v encodes differently after a round trip", e)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	whole := AppendEvent(nil, samples[0])
	for n := range len(whole) {
		if _, err := DecodeEvent(whole[:n]); !errors.Is(err, ErrTruncated) {
			t.Errorf("first %d of %d bytes: error %v, want ErrTruncated", n, len(whole), err)
		}
	}
	if _, err := DecodeEvent(append(whole, 0)); err == nil {
		t.Error("a trailing byte was accepted")
	}
	if _, err := DecodeEvent([]byte{9, 0}); err == nil {
		t.Error("kind 9 was accepted")
	}
	if _, err := DecodeEvent([]byte{byte(KindBid), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}); err == nil {
		t.Error("an 11-byte varint was accepted")
	}
}

// FuzzDecodeEvent feeds DecodeEvent bytes from outside (a Kafka topic
// may hold anything): it must return an error or an event that encodes
// back to the same bytes, never panic.
func FuzzDecodeEvent(f *testing.F) {
	for _, e := range samples {
		f.Add(AppendEvent(nil, e))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEvent(b)
		if err != nil {
			return
		}
		if again := AppendEvent(nil, e); !bytes.Equal(again, b) {
			// Varints that are not the shortest decode too; compare values.
			e2, err := DecodeEvent(again)
			if err != nil || !reflect.DeepEqual(e, e2) {
				t.Fatalf("%x decoded to %v, which does not round trip", b, e)
			}
		}
	})
}

// BenchmarkEventCoders compares this package's coder with the schema row
// coder the Go SDK would infer for Event (the reason for coder.go).
func BenchmarkEventCoders(b *testing.B) {
	e := samples[1]
	b.Run("binary/encode", func(b *testing.B) {
		for range b.N {
			_ = encodeEvent(e)
		}
	})
	enc := encodeEvent(e)
	b.Run("binary/decode", func(b *testing.B) {
		for range b.N {
			if _, err := DecodeEvent(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	rt := reflect.TypeOf(Event{})
	rowEnc, err := coder.RowEncoderForStruct(rt)
	if err != nil {
		b.Fatal(err)
	}
	rowDec, err := coder.RowDecoderForStruct(rt)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.Run("row/encode", func(b *testing.B) {
		for range b.N {
			buf.Reset()
			if err := rowEnc(e, &buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	buf.Reset()
	if err := rowEnc(e, &buf); err != nil {
		b.Fatal(err)
	}
	row := buf.Bytes()
	b.Run("row/decode", func(b *testing.B) {
		for range b.N {
			if _, err := rowDec(bytes.NewReader(row)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
