package model

import "fmt"

// Person is a new user of the auction site (Beam's model.Person). DateTime
// is its event time in milliseconds since the Unix epoch.
type Person struct {
	ID           int64
	Name         string
	EmailAddress string
	CreditCard   string
	City         string
	State        string
	DateTime     int64
	Extra        string
}

// Auction is a new item for sale (Beam's model.Auction): it opens at
// DateTime and closes at Expires, both in milliseconds since the epoch.
type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64
	Reserve     int64
	DateTime    int64
	Expires     int64
	Seller      int64
	Category    int64
	Extra       string
}

// Bid is a bid on an auction (Beam's model.Bid); Price is in cents.
type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64
	DateTime int64
	Extra    string
}

// Event is one of a new person, a new auction or a bid: exactly one field
// is set.
type Event struct {
	NewPerson  *Person
	NewAuction *Auction
	Bid        *Bid
}

// Kind names what an event holds.
type Kind byte

// The kinds of event, as the first byte of their encoding.
const (
	KindPerson  Kind = 1
	KindAuction Kind = 2
	KindBid     Kind = 3
)

// Kind reports which field of e is set, or 0 if none is.
func (e Event) Kind() Kind {
	switch {
	case e.NewPerson != nil:
		return KindPerson
	case e.NewAuction != nil:
		return KindAuction
	case e.Bid != nil:
		return KindBid
	}
	return 0
}

// Timestamp is the event time of what e holds, in milliseconds.
func (e Event) Timestamp() int64 {
	switch {
	case e.NewPerson != nil:
		return e.NewPerson.DateTime
	case e.NewAuction != nil:
		return e.NewAuction.DateTime
	case e.Bid != nil:
		return e.Bid.DateTime
	}
	return 0
}

// String renders e with every field, in a fixed order: two equal events
// print alike.
func (e Event) String() string {
	switch {
	case e.NewPerson != nil:
		return e.NewPerson.String()
	case e.NewAuction != nil:
		return e.NewAuction.String()
	case e.Bid != nil:
		return e.Bid.String()
	}
	return "Event{}"
}

func (p Person) String() string {
	return fmt.Sprintf("Person{id:%d name:%q email:%q card:%q city:%q state:%q time:%d extra:%q}",
		p.ID, p.Name, p.EmailAddress, p.CreditCard, p.City, p.State, p.DateTime, p.Extra)
}

func (a Auction) String() string {
	return fmt.Sprintf("Auction{id:%d item:%q desc:%q initial:%d reserve:%d time:%d expires:%d seller:%d category:%d extra:%q}",
		a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra)
}

func (b Bid) String() string {
	return fmt.Sprintf("Bid{auction:%d bidder:%d price:%d time:%d extra:%q}", b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra)
}
