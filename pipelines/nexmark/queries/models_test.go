package queries_test

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/generator"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Models compute each query's results directly from the generator's
// events, without Beam, as Beam's suite checks its queries against
// NexmarkQueryModels: what a correct run in batch must print. They hold
// the queries' semantics written a second way (and by hand); a runner
// and a query that agree with each other but not with its model are both
// suspect.

var models = map[string]func(cfg config.Config, evs []model.Event) []string{
	"0":                       model0,
	"1":                       model1,
	"2":                       model2,
	"3":                       model3,
	"4":                       model4,
	"5":                       model5,
	"6":                       model6,
	"7":                       model7,
	"8":                       model8,
	"9":                       model9,
	"10":                      model10,
	"11":                      model11,
	"12":                      model12,
	"bounded_side_input_join": modelSideJoin,
}

func allEvents(cfg config.Config) []model.Event {
	g, err := generator.New(cfg)
	if err != nil {
		panic(err)
	}
	var evs []model.Event
	for i := range g.Generators() {
		for n := range g.Count(i) {
			e, _ := g.Event(i, n)
			evs = append(evs, e)
		}
	}
	return evs
}

func bids(evs []model.Event) []model.Bid {
	var out []model.Bid
	for _, e := range evs {
		if e.Bid != nil {
			out = append(out, *e.Bid)
		}
	}
	return out
}

func str[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

func model0(_ config.Config, evs []model.Event) []string { return str(evs) }

func model1(_ config.Config, evs []model.Event) []string {
	bs := bids(evs)
	for i := range bs {
		bs[i].Price = bs[i].Price * 89 / 100
	}
	return str(bs)
}

func model2(cfg config.Config, evs []model.Event) []string {
	var out []model.AuctionPrice
	for _, b := range bids(evs) {
		if b.Auction%int64(cfg.AuctionSkip) == 0 {
			out = append(out, model.AuctionPrice{Auction: b.Auction, Price: b.Price})
		}
	}
	return str(out)
}

func model3(_ config.Config, evs []model.Event) []string {
	persons := map[int64]model.Person{}
	for _, e := range evs {
		if p := e.NewPerson; p != nil && (p.State == "OR" || p.State == "ID" || p.State == "CA") {
			persons[p.ID] = *p
		}
	}
	var out []model.NameCityStateID
	for _, e := range evs {
		if a := e.NewAuction; a != nil && a.Category == 10 {
			if p, ok := persons[a.Seller]; ok {
				out = append(out, model.NameCityStateID{Name: p.Name, City: p.City, State: p.State, ID: a.ID})
			}
		}
	}
	return str(out)
}

// winners is WinningBids in batch: every auction with a bid made before
// it expired at or above its reserve, with its best such bid.
func winners(evs []model.Event) []model.AuctionBid {
	best := map[int64]model.Bid{}
	auctions := map[int64]model.Auction{}
	for _, e := range evs {
		if a := e.NewAuction; a != nil {
			auctions[a.ID] = *a
		}
	}
	for _, b := range bids(evs) {
		a, ok := auctions[b.Auction]
		if !ok || b.DateTime >= a.Expires || b.Price < a.Reserve {
			continue
		}
		old, ok := best[a.ID]
		if !ok || b.Price > old.Price || (b.Price == old.Price && (b.DateTime < old.DateTime ||
			(b.DateTime == old.DateTime && (b.Bidder < old.Bidder || (b.Bidder == old.Bidder && b.Extra < old.Extra))))) {
			best[a.ID] = b
		}
	}
	var out []model.AuctionBid
	for id, b := range best {
		out = append(out, model.AuctionBid{Auction: auctions[id], Bid: b})
	}
	return out
}

func model9(_ config.Config, evs []model.Event) []string { return str(winners(evs)) }

// slidingStarts lists the starts of the sliding windows (size and period
// in ms, aligned to the epoch) that hold ts.
func slidingStarts(ts, size, period int64) []int64 {
	var out []int64
	for start := floorDiv(ts, period) * period; start > ts-size; start -= period {
		out = append(out, start)
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func model4(cfg config.Config, evs []model.Event) []string {
	type key struct{ start, category int64 }
	sum, n := map[key]float64{}, map[key]int64{}
	for _, w := range winners(evs) {
		ts := w.Auction.Expires - 1 // WinningBids emits at the end of the auction's window
		for _, st := range slidingStarts(ts, cfg.WindowSizeSec*1000, cfg.WindowPeriodSec*1000) {
			k := key{st, w.Auction.Category}
			sum[k] += float64(w.Bid.Price)
			n[k]++
		}
	}
	var out []model.CategoryPrice
	for k, s := range sum {
		// Beam's IsLast would be true; the Go SDK's combine drops panes (q4.go).
		out = append(out, model.CategoryPrice{Category: k.category, Price: javaRound(s / float64(n[k])), IsLast: false})
	}
	return str(out)
}

func model5(cfg config.Config, evs []model.Event) []string {
	counts := map[int64]map[int64]int64{} // window start -> auction -> bids
	for _, b := range bids(evs) {
		for _, st := range slidingStarts(b.DateTime, cfg.WindowSizeSec*1000, cfg.WindowPeriodSec*1000) {
			if counts[st] == nil {
				counts[st] = map[int64]int64{}
			}
			counts[st][b.Auction]++
		}
	}
	var out []model.AuctionCount
	for _, byAuction := range counts {
		top := int64(0)
		for _, c := range byAuction {
			top = max(top, c)
		}
		for a, c := range byAuction {
			if c == top {
				out = append(out, model.AuctionCount{Auction: a, Num: c})
			}
		}
	}
	return str(out)
}

func model6(_ config.Config, evs []model.Event) []string {
	bySeller := map[int64][]model.Bid{}
	for _, w := range winners(evs) {
		bySeller[w.Auction.Seller] = append(bySeller[w.Auction.Seller], w.Bid)
	}
	var out []string
	for seller, bs := range bySeller {
		n := int64(len(bs))
		sort.Slice(bs, func(i, j int) bool {
			if bs[i].DateTime != bs[j].DateTime {
				return bs[i].DateTime < bs[j].DateTime
			}
			return bs[i].Price < bs[j].Price
		})
		if len(bs) > 10 {
			bs = bs[len(bs)-10:]
		}
		sum := int64(0)
		for _, b := range bs {
			sum += b.Price
		}
		out = append(out, model.SellerPrice{Seller: seller, Price: javaRound(float64(sum) / float64(len(bs))), Bids: n}.String())
	}
	return out
}

func fixedStart(ts, size int64) int64 { return floorDiv(ts, size) * size }

func model7(cfg config.Config, evs []model.Event) []string {
	size := cfg.WindowSizeSec * 1000
	top := map[int64]int64{}
	bs := bids(evs)
	for _, b := range bs {
		st := fixedStart(b.DateTime, size)
		top[st] = max(top[st], b.Price)
	}
	var out []model.Bid
	for _, b := range bs {
		if b.Price == top[fixedStart(b.DateTime, size)] {
			out = append(out, b)
		}
	}
	return str(out)
}

func model8(cfg config.Config, evs []model.Event) []string {
	size := cfg.WindowSizeSec * 1000
	type key struct{ start, id int64 }
	persons := map[key]model.Person{}
	for _, e := range evs {
		if p := e.NewPerson; p != nil {
			persons[key{fixedStart(p.DateTime, size), p.ID}] = *p
		}
	}
	var out []model.IDNameReserve
	for _, e := range evs {
		if a := e.NewAuction; a != nil {
			if p, ok := persons[key{fixedStart(a.DateTime, size), a.Seller}]; ok {
				out = append(out, model.IDNameReserve{ID: p.ID, Name: p.Name, Reserve: a.Reserve})
			}
		}
	}
	return str(out)
}

func model10(cfg config.Config, evs []model.Event) []string {
	size := cfg.WindowSizeSec * 1000
	windows := map[int64]bool{}
	for _, e := range evs {
		windows[fixedStart(e.Timestamp(), size)] = true
	}
	var out []model.Done
	for st := range windows {
		end := time.UnixMilli(st + size - 1).UTC().Format("2006-01-02T15:04:05.000Z")
		out = append(out, model.Done{Message: "written for timestamp " + end})
	}
	return str(out)
}

// model11 merges each bidder's bids into sessions: a bid starts a new
// one unless it falls within the gap of the session so far.
func model11(cfg config.Config, evs []model.Event) []string {
	gap := cfg.WindowSizeSec * 1000
	times := map[int64][]int64{}
	for _, b := range bids(evs) {
		times[b.Bidder] = append(times[b.Bidder], b.DateTime)
	}
	var out []model.BidsPerSession
	for bidder, ts := range times {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		n, end := int64(0), int64(0)
		for k, t := range ts {
			if k > 0 && t >= end {
				out = append(out, model.BidsPerSession{Bidder: bidder, Bids: n})
				n = 0
			}
			n++
			end = max(end, t+gap)
		}
		out = append(out, model.BidsPerSession{Bidder: bidder, Bids: n})
	}
	return str(out)
}

func model12(_ config.Config, evs []model.Event) []string {
	total := map[int64]int64{}
	for _, b := range bids(evs) {
		total[b.Bidder]++
	}
	var out []model.BidsPerSession
	for bidder, n := range total {
		out = append(out, model.BidsPerSession{Bidder: bidder, Bids: n})
	}
	return str(out)
}

func modelSideJoin(cfg config.Config, evs []model.Event) []string {
	bs := bids(evs)
	for i := range bs {
		bs[i].Extra = strconv.FormatInt(bs[i].Bidder%int64(cfg.SideInputRowCount), 10)
	}
	return str(bs)
}

func javaRound(x float64) int64 {
	f := float64(int64(x))
	if x < 0 && f != x {
		f--
	}
	if x-f >= 0.5 {
		f++
	}
	return int64(f)
}
