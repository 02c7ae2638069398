package generator

import (
	"fmt"
	"math"
	"strings"

	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Proportions of the three kinds of event: of every 50 consecutive event
// ids, one is a person, three are auctions and 46 are bids.
const (
	personProportion  = 1
	auctionProportion = 3
	bidProportion     = 46
	proportions       = personProportion + auctionProportion + bidProportion
)

// First ids, kept away from 0 so that queries on small inputs still find
// matches (GeneratorConfig).
const (
	FirstAuctionID  = 1000
	FirstPersonID   = 1000
	FirstCategoryID = 10
)

const (
	numCategories  = 5
	auctionIDLead  = 10 // auctions a bid may name before they exist
	personIDLead   = 10
	hotSellerRatio = 100 // the hot seller, bidder, auction is the first of each 100
	hotBidderRatio = 100
	hotAuctionRate = 100
	minStringLen   = 3
)

var (
	usStates   = strings.Split("AZ,CA,ID,OR,WA,WY", ",")
	usCities   = strings.Split("Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,Seattle,Kent,Cheyenne", ",")
	firstNames = strings.Split("Peter,Paul,Luke,John,Saul,Vicky,Kate,Julie,Sarah,Deiter,Walter", ",")
	lastNames  = strings.Split("Shultz,Abrams,Spencer,White,Bartels,Walton,Smith,Jones,Noris", ",")
)

// lastBase0PersonID is the id (from 0) of the latest person at or before
// eventID.
func lastBase0PersonID(eventID int64) int64 {
	epoch, offset := eventID/proportions, eventID%proportions
	if offset >= personProportion {
		offset = personProportion - 1
	}
	return epoch*personProportion + offset
}

// lastBase0AuctionID is the id (from 0) of the latest auction at or before
// eventID.
func lastBase0AuctionID(eventID int64) int64 {
	epoch, offset := eventID/proportions, eventID%proportions
	switch {
	case offset < personProportion: // a person: the last auction of the previous epoch
		epoch--
		offset = auctionProportion - 1
	case offset >= personProportion+auctionProportion: // a bid: this epoch's last auction
		offset = auctionProportion - 1
	default:
		offset -= personProportion
	}
	return epoch*auctionProportion + offset
}

// nextBase0PersonID picks one of the active people, or one of the next few
// to come.
func (g *Generator) nextBase0PersonID(eventID int64, r *javaRandom) int64 {
	numPeople := lastBase0PersonID(eventID) + 1
	active := min(numPeople, int64(g.cfg.NumActivePeople))
	return numPeople - active + r.nextLongN(active+personIDLead)
}

// nextBase0AuctionID picks an auction likely still open, or one of the
// next few to come.
func (g *Generator) nextBase0AuctionID(eventID int64, r *javaRandom) int64 {
	maxAuction := lastBase0AuctionID(eventID)
	minAuction := max(maxAuction-int64(g.cfg.NumInFlightAuctions), 0)
	return minAuction + r.nextLongN(maxAuction-minAuction+1+auctionIDLead)
}

func (g *Generator) person(eventID int64, r *javaRandom, ts int64) *model.Person {
	p := &model.Person{ID: lastBase0PersonID(eventID) + FirstPersonID, DateTime: ts}
	p.Name = firstNames[r.nextIntN(int32(len(firstNames)))] + " " + lastNames[r.nextIntN(int32(len(lastNames)))]
	p.EmailAddress = nextString(r, 7) + "@" + nextString(r, 5) + ".com"
	var cc strings.Builder
	for i := range 4 {
		if i > 0 {
			cc.WriteByte(' ')
		}
		fmt.Fprintf(&cc, "%04d", r.nextIntN(10000))
	}
	p.CreditCard = cc.String()
	p.City = usCities[r.nextIntN(int32(len(usCities)))]
	p.State = usStates[r.nextIntN(int32(len(usStates)))]
	size := 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = nextExtra(r, size, g.cfg.AvgPersonByteSize)
	return p
}

// auction makes the auction of event number n (whose adjusted number is
// m) of a generator.
func (g *Generator) auction(eventID, m int64, r *javaRandom, ts int64) *model.Auction {
	a := &model.Auction{ID: lastBase0AuctionID(eventID) + FirstAuctionID, DateTime: ts}
	if r.nextIntN(int32(g.cfg.HotSellersRatio)) > 0 {
		a.Seller = lastBase0PersonID(eventID) / hotSellerRatio * hotSellerRatio
	} else {
		a.Seller = g.nextBase0PersonID(eventID, r)
	}
	a.Seller += FirstPersonID
	a.Category = FirstCategoryID + int64(r.nextIntN(numCategories))
	a.InitialBid = nextPrice(r)
	a.Expires = ts + g.auctionLengthMs(m, r, ts)
	a.ItemName = nextString(r, 20)
	a.Description = nextString(r, 100)
	a.Reserve = a.InitialBid + nextPrice(r)
	size := 8 + len(a.ItemName) + len(a.Description) + 8*5
	a.Extra = nextExtra(r, size, g.cfg.AvgAuctionByteSize)
	return a
}

// auctionLengthMs is random, averaging the time until NumInFlightAuctions
// more auctions have opened.
func (g *Generator) auctionLengthMs(m int64, r *javaRandom, ts int64) int64 {
	ahead := int64(g.cfg.NumInFlightAuctions) * proportions / auctionProportion
	horizon := g.tl.timestamp(m+ahead) - ts
	return 1 + r.nextLongN(max(horizon*2, 1))
}

func (g *Generator) bid(eventID int64, r *javaRandom, ts int64) *model.Bid {
	b := &model.Bid{DateTime: ts}
	if r.nextIntN(int32(g.cfg.HotAuctionRatio)) > 0 {
		b.Auction = lastBase0AuctionID(eventID) / hotAuctionRate * hotAuctionRate
	} else {
		b.Auction = g.nextBase0AuctionID(eventID, r)
	}
	b.Auction += FirstAuctionID
	if r.nextIntN(int32(g.cfg.HotBiddersRatio)) > 0 {
		// The second of the batch, so that hot bidders and sellers differ.
		b.Bidder = lastBase0PersonID(eventID)/hotBidderRatio*hotBidderRatio + 1
	} else {
		b.Bidder = g.nextBase0PersonID(eventID, r)
	}
	b.Bidder += FirstPersonID
	b.Price = nextPrice(r)
	b.Extra = nextExtra(r, 32, g.cfg.AvgBidByteSize)
	return b
}

// nextPrice is a price in cents, log-uniform from $1 to $1M.
func nextPrice(r *javaRandom) int64 {
	return javaRound(math.Pow(10, r.nextDouble()*6) * 100)
}

// nextString is up to maxLen-1 random letters with the odd space, trimmed.
func nextString(r *javaRandom, maxLen int32) string {
	n := minStringLen + r.nextIntN(maxLen-minStringLen)
	b := make([]byte, 0, n)
	for range n {
		if r.nextIntN(13) == 0 {
			b = append(b, ' ')
		} else {
			b = append(b, byte('a'+r.nextIntN(26)))
		}
	}
	return strings.TrimSpace(string(b))
}

// nextExactString is n characters, six from each random int. Java takes
// the remainder of a negative int too, so its characters run from 'H' to
// 'z', and so do these.
func nextExactString(r *javaRandom, n int) string {
	b := make([]byte, n)
	var rnd int32
	left := 0
	for i := range b {
		if left == 0 {
			rnd = r.nextInt()
			left = 6
		}
		b[i] = byte('a' + rnd%26)
		rnd /= 26
		left--
	}
	return string(b)
}

// nextExtra pads an event so that its size averages avg bytes.
func nextExtra(r *javaRandom, current, avg int) string {
	if current > avg {
		return ""
	}
	avg -= current
	delta := int(javaRound(float64(avg) * 0.2))
	size := avg - delta
	if delta != 0 {
		size += int(r.nextIntN(int32(2 * delta)))
	}
	return nextExactString(r, size)
}
