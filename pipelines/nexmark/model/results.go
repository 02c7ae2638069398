package model

import "fmt"

// The queries' results, named as in Beam's suite. Each prints every field
// in a fixed order, which is what the cross-runner tests compare.

// AuctionPrice is query 2's result: a bid's auction and price.
type AuctionPrice struct {
	Auction int64
	Price   int64
}

func (r AuctionPrice) String() string { return fmt.Sprintf("AuctionPrice{%d %d}", r.Auction, r.Price) }

// NameCityStateID is query 3's result: a seller and one of their auctions.
type NameCityStateID struct {
	Name  string
	City  string
	State string
	ID    int64
}

func (r NameCityStateID) String() string {
	return fmt.Sprintf("NameCityStateID{%q %q %q %d}", r.Name, r.City, r.State, r.ID)
}

// CategoryPrice is query 4's result: the rounded mean winning price of a
// category in one window, and whether the pane was the window's last.
type CategoryPrice struct {
	Category int64
	Price    int64
	IsLast   bool
}

func (r CategoryPrice) String() string {
	return fmt.Sprintf("CategoryPrice{%d %d %t}", r.Category, r.Price, r.IsLast)
}

// AuctionCount is query 5's result: an auction with the most bids in a
// window, and how many.
type AuctionCount struct {
	Auction int64
	Num     int64
}

func (r AuctionCount) String() string { return fmt.Sprintf("AuctionCount{%d %d}", r.Auction, r.Num) }

// SellerPrice is query 6's result: a seller's mean selling price over
// their last ten closed auctions. Bids is how many of the seller's
// auctions the pane has seen (Beam's SellerPrice has no such field): the
// panes of query 6 accumulate, so every correct run agrees on the result
// with the most.
type SellerPrice struct {
	Seller int64
	Price  int64
	Bids   int64
}

func (r SellerPrice) String() string {
	return fmt.Sprintf("SellerPrice{%d %d bids:%d}", r.Seller, r.Price, r.Bids)
}

// IDNameReserve is query 8's result: a new person and the reserve of an
// auction they opened in the same window.
type IDNameReserve struct {
	ID      int64
	Name    string
	Reserve int64
}

func (r IDNameReserve) String() string {
	return fmt.Sprintf("IDNameReserve{%d %q %d}", r.ID, r.Name, r.Reserve)
}

// AuctionBid is a closed auction and its winning bid (queries 4, 6, 9).
type AuctionBid struct {
	Auction Auction
	Bid     Bid
}

func (r AuctionBid) String() string { return fmt.Sprintf("AuctionBid{%v %v}", r.Auction, r.Bid) }

// BidsPerSession is the result of queries 11 and 12: a bidder and the
// bids in one of their sessions (11) or processing-time panes (12).
type BidsPerSession struct {
	Bidder int64
	Bids   int64
}

func (r BidsPerSession) String() string {
	return fmt.Sprintf("BidsPerSession{%d %d}", r.Bidder, r.Bids)
}

// Done is query 10's result: the index written for a window of log files.
type Done struct {
	Message string
}

func (r Done) String() string { return fmt.Sprintf("Done{%q}", r.Message) }
