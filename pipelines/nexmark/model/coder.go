package model

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The binary encoding of events: a kind byte for an Event, then each
// field in declaration order, integers as zig-zag varints
// (encoding/binary's AppendVarint) and strings as a uvarint length and
// their bytes. It is a pure function of the value, so equal values encode
// to equal bytes (what a key or a comparison needs), and it is what the
// Kafka producer writes and the Kafka source decodes.

// AppendEvent appends e's encoding to b.
func AppendEvent(b []byte, e Event) []byte {
	switch {
	case e.NewPerson != nil:
		return AppendPerson(append(b, byte(KindPerson)), *e.NewPerson)
	case e.NewAuction != nil:
		return AppendAuction(append(b, byte(KindAuction)), *e.NewAuction)
	case e.Bid != nil:
		return AppendBid(append(b, byte(KindBid)), *e.Bid)
	}
	return append(b, 0)
}

// AppendPerson appends p's encoding to b.
func AppendPerson(b []byte, p Person) []byte {
	b = binary.AppendVarint(b, p.ID)
	b = appendString(b, p.Name)
	b = appendString(b, p.EmailAddress)
	b = appendString(b, p.CreditCard)
	b = appendString(b, p.City)
	b = appendString(b, p.State)
	b = binary.AppendVarint(b, p.DateTime)
	return appendString(b, p.Extra)
}

// AppendAuction appends a's encoding to b.
func AppendAuction(b []byte, a Auction) []byte {
	b = binary.AppendVarint(b, a.ID)
	b = appendString(b, a.ItemName)
	b = appendString(b, a.Description)
	for _, v := range [...]int64{a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category} {
		b = binary.AppendVarint(b, v)
	}
	return appendString(b, a.Extra)
}

// AppendBid appends b's encoding to buf.
func AppendBid(buf []byte, b Bid) []byte {
	for _, v := range [...]int64{b.Auction, b.Bidder, b.Price, b.DateTime} {
		buf = binary.AppendVarint(buf, v)
	}
	return appendString(buf, b.Extra)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// ErrTruncated is returned for an encoding that ends inside a field.
var ErrTruncated = errors.New("model: encoding ends inside a field")

// DecodeEvent decodes an encoding made by AppendEvent; bytes after the
// event are an error.
func DecodeEvent(b []byte) (Event, error) {
	d := decoder{b: b}
	e := d.event()
	return e, d.finish("event")
}

// DecodePerson, DecodeAuction and DecodeBid decode what AppendPerson,
// AppendAuction and AppendBid made.
func DecodePerson(b []byte) (Person, error) {
	d := decoder{b: b}
	p := d.person()
	return p, d.finish("person")
}

func DecodeAuction(b []byte) (Auction, error) {
	d := decoder{b: b}
	a := d.auction()
	return a, d.finish("auction")
}

func DecodeBid(b []byte) (Bid, error) {
	d := decoder{b: b}
	v := d.bid()
	return v, d.finish("bid")
}

// decoder reads fields from b; after the first error every read returns a
// zero value and err keeps that error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) finish(what string) error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("model: %d bytes after the %s", len(d.b), what)
	}
	return d.err
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = ErrTruncated
		if n < 0 {
			d.err = errors.New("model: integer overflows 64 bits")
		}
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	if d.err != nil {
		return ""
	}
	l, n := binary.Uvarint(d.b)
	if n <= 0 || l > uint64(len(d.b)-n) {
		d.err = ErrTruncated
		return ""
	}
	s := string(d.b[n : n+int(l)])
	d.b = d.b[n+int(l):]
	return s
}

func (d *decoder) event() Event {
	if len(d.b) == 0 {
		d.err = ErrTruncated
		return Event{}
	}
	k := Kind(d.b[0])
	d.b = d.b[1:]
	switch k {
	case KindPerson:
		p := d.person()
		return Event{NewPerson: &p}
	case KindAuction:
		a := d.auction()
		return Event{NewAuction: &a}
	case KindBid:
		b := d.bid()
		return Event{Bid: &b}
	}
	d.err = fmt.Errorf("model: unknown event kind %d", k)
	return Event{}
}

func (d *decoder) person() Person {
	return Person{ID: d.int(), Name: d.string(), EmailAddress: d.string(), CreditCard: d.string(),
		City: d.string(), State: d.string(), DateTime: d.int(), Extra: d.string()}
}

func (d *decoder) auction() Auction {
	return Auction{ID: d.int(), ItemName: d.string(), Description: d.string(), InitialBid: d.int(),
		Reserve: d.int(), DateTime: d.int(), Expires: d.int(), Seller: d.int(), Category: d.int(), Extra: d.string()}
}

func (d *decoder) bid() Bid {
	return Bid{Auction: d.int(), Bidder: d.int(), Price: d.int(), DateTime: d.int(), Extra: d.string()}
}

// AppendUvarint appends v as a uvarint, the length prefix of records in
// query 10's files.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
