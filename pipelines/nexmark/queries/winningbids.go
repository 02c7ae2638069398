package queries

import (
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/generator"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// WinningBids finds the winning bid of each closed auction: the highest
// bid at or above the reserve made before the auction expired, the
// earliest of equal ones (Beam's WinningBids, used by queries 4, 6, 9).
//
// Beam brings an auction and its bids together with a custom merging
// WindowFn: each auction gets a window [opened, expires), each bid one
// [made, made+2d) (d the expected auction duration), and a bid window
// merges into its auction's if it starts before the auction expires; a
// CoGroupByKey then fires at the end of each merged window. The Go SDK
// has no custom WindowFns, so here the same join is a stateful DoFn keyed
// by auction id in the global window:
//
//   - an auction goes into value state, with an event-time timer at
//     expires-1ms, the end of Beam's auction window;
//   - a bid for a known auction is judged at once (made before expires,
//     at or above the reserve) and kept in the same value if it is the
//     best so far; one for an auction not yet seen waits in bag state
//     until the auction comes, or until the watermark passes made+2d, the
//     end of Beam's bid window, and is then dropped, as Beam drops a bid
//     window that never merged;
//   - when the auction's timer fires, its best bid, if any, is emitted at
//     expires-1ms (Beam's window end, the default output time of its
//     CoGroupByKey), and the state cleared.
//
// What differs from Beam: the output is in the global window, not in the
// auction's merged window (query 4 re-windows it, 6 puts it in the global
// window anyway, 9 prints it); an auction that arrives after its window
// closed (late) is judged with whatever bids arrived, where Beam drops it
// as late; a bid for an already closed auction waits for its 2d and is
// dropped, as in Beam; and ties in price and time go to the lower bidder
// id, then the smaller extra, where Beam keeps whichever its iteration met
// first. Keeping the best bid rather than all of them costs one state read
// per bid, and rarely a write. Beam features: user state (value, bag),
// event-time timers with and without output timestamps.
func WinningBids(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("WinningBids")
	keyed := beam.ParDo(s.Scope("AuctionOrBid"), keyAuctionOrBid, events)
	return beam.ParDo(s.Scope("Join"), &winningBidsFn{
		BidWaitMs: 2 * generator.ExpectedAuctionDurationMs(&cfg),
		Open:      state.MakeValueState[wbOpen]("open"),
		Pending:   state.MakeBagState[model.Bid]("pending"),
		Timer:     timers.InEventTime("winningBids"),
	}, keyed)
}

func init() {
	register.Function2x0(keyAuctionOrBid)
	register.DoFn6x1[context.Context, state.Provider, timers.Provider, int64, model.Event, func(model.AuctionBid), error](&winningBidsFn{})
	register.Emitter1[model.AuctionBid]()
	register.Function1x1(encodeWBOpen)
	register.Function1x2(decodeWBOpen)
	beam.RegisterCoder(reflect.TypeOf(wbOpen{}), encodeWBOpen, decodeWBOpen)
}

var (
	wbNoAuction    = beam.NewCounter("WinningBids", "noAuction")
	wbUnderReserve = beam.NewCounter("WinningBids", "underReserve")
	wbNoValidBids  = beam.NewCounter("WinningBids", "noValidBids")
	wbDuplicate    = beam.NewCounter("WinningBids", "duplicateAuction")
)

func keyAuctionOrBid(e model.Event, emit func(int64, model.Event)) {
	switch {
	case e.NewAuction != nil:
		emit(e.NewAuction.ID, e)
	case e.Bid != nil:
		emit(e.Bid.Auction, e)
	}
}

// wbOpen is what WinningBids keeps of an auction id: the auction once
// seen, its best bid so far, and when bids still waiting for the auction
// are next due to go (0: none wait).
type wbOpen struct {
	Auction model.Auction
	Known   bool
	Best    model.Bid
	HasBest bool
	GCAt    int64
}

type winningBidsFn struct {
	BidWaitMs int64
	Open      state.Value[wbOpen]
	Pending   state.Bag[model.Bid]
	// Timer is one family with two tags, closeTag at the auction's end
	// and gcTag when bids waiting for their auction are due to go. (Two
	// families hang the Go SDK's harness whenever a bundle's end marks
	// reach it before the bundle starts: it waits for one end mark per
	// transform, runners send one per family, and the surplus that
	// arrives early is never matched; on weir and on Prism alike.)
	Timer timers.EventTime
}

const (
	closeTag = "close"
	gcTag    = "bidGC"
)

func (fn *winningBidsFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, _ int64, e model.Event, _ func(model.AuctionBid)) error {
	open, _, err := fn.Open.Read(sp)
	if err != nil {
		return err
	}
	if a := e.NewAuction; a != nil {
		if open.Known {
			wbDuplicate.Inc(ctx, 1)
			return nil
		}
		open.Auction, open.Known = *a, true
		if open.GCAt != 0 { // bids came first
			pending, _, err := fn.Pending.Read(sp)
			if err != nil {
				return err
			}
			for _, b := range pending {
				judge(ctx, &open, b)
			}
			if err := fn.Pending.Clear(sp); err != nil {
				return err
			}
			open.GCAt = 0
			fn.Timer.ClearTag(tp, gcTag)
		}
		fn.Timer.Set(tp, time.UnixMilli(a.Expires-1), timers.WithTag(closeTag))
		return fn.Open.Write(sp, open)
	}
	b := *e.Bid
	if open.Known {
		if judge(ctx, &open, b) {
			return fn.Open.Write(sp, open)
		}
		return nil
	}
	if err := fn.Pending.Add(sp, b); err != nil {
		return err
	}
	if deadline := b.DateTime + fn.BidWaitMs; open.GCAt == 0 || deadline < open.GCAt {
		open.GCAt = deadline
		fn.Timer.Set(tp, time.UnixMilli(deadline), timers.WithTag(gcTag), timers.WithNoOutputTimestamp())
		return fn.Open.Write(sp, open)
	}
	return nil
}

// judge makes b open's best bid if it is valid and better, and reports
// whether it did.
func judge(ctx context.Context, open *wbOpen, b model.Bid) bool {
	switch {
	case b.DateTime >= open.Auction.Expires:
		return false // Beam's bid window starts after the auction's end: no merge
	case b.Price < open.Auction.Reserve:
		wbUnderReserve.Inc(ctx, 1)
		return false
	case open.HasBest && !betterBid(&b, &open.Best):
		return false
	}
	open.Best, open.HasBest = b, true
	return true
}

func (fn *winningBidsFn) OnTimer(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, _ int64, timer timers.Context, emit func(model.AuctionBid)) error {
	open, _, err := fn.Open.Read(sp)
	if err != nil {
		return err
	}
	if timer.Tag == gcTag {
		if open.Known {
			return nil // the auction came; its own timer judges
		}
		return fn.collectBids(ctx, ts.Milliseconds(), sp, tp, open)
	}
	if !open.Known {
		return nil
	}
	if open.HasBest {
		emit(model.AuctionBid{Auction: open.Auction, Bid: open.Best})
	} else {
		wbNoValidBids.Inc(ctx, 1)
	}
	return fn.Open.Clear(sp)
}

// collectBids drops the bids still without an auction whose wait ended
// by now, and sets the timer for the next.
func (fn *winningBidsFn) collectBids(ctx context.Context, now int64, sp state.Provider, tp timers.Provider, open wbOpen) error {
	bids, _, err := fn.Pending.Read(sp)
	if err != nil {
		return err
	}
	if err := fn.Pending.Clear(sp); err != nil {
		return err
	}
	next := int64(0)
	for _, b := range bids {
		end := b.DateTime + fn.BidWaitMs
		if end <= now {
			wbNoAuction.Inc(ctx, 1)
			continue
		}
		if err := fn.Pending.Add(sp, b); err != nil {
			return err
		}
		if next == 0 || end < next {
			next = end
		}
	}
	if next == 0 {
		return fn.Open.Clear(sp)
	}
	open.GCAt = next
	fn.Timer.Set(tp, time.UnixMilli(next), timers.WithTag(gcTag), timers.WithNoOutputTimestamp())
	return fn.Open.Write(sp, open)
}

// betterBid orders bids as Beam's PRICE_THEN_DESCENDING_TIME (higher
// price, then earlier), then by lower bidder and smaller extra so that
// the order is total.
func betterBid(b, than *model.Bid) bool {
	switch {
	case b.Price != than.Price:
		return b.Price > than.Price
	case b.DateTime != than.DateTime:
		return b.DateTime < than.DateTime
	case b.Bidder != than.Bidder:
		return b.Bidder < than.Bidder
	}
	return b.Extra < than.Extra
}

func encodeWBOpen(o wbOpen) []byte {
	var flags byte
	if o.Known {
		flags |= 1
	}
	if o.HasBest {
		flags |= 2
	}
	b := binary.AppendVarint(append(make([]byte, 0, 256), flags), o.GCAt)
	if o.Known {
		b = appendBytes(b, model.AppendAuction(nil, o.Auction))
	}
	if o.HasBest {
		b = appendBytes(b, model.AppendBid(nil, o.Best))
	}
	return b
}

func decodeWBOpen(b []byte) (wbOpen, error) {
	var o wbOpen
	if len(b) == 0 {
		return o, fmt.Errorf("WinningBids: empty state")
	}
	flags := b[0]
	gc, n := binary.Varint(b[1:])
	if n <= 0 {
		return o, fmt.Errorf("WinningBids: bad state")
	}
	o.GCAt, b = gc, b[1+n:]
	var err error
	if flags&1 != 0 {
		var part []byte
		if part, b, err = cutBytes(b); err == nil {
			o.Auction, err = model.DecodeAuction(part)
		}
		o.Known = true
	}
	if flags&2 != 0 && err == nil {
		var part []byte
		if part, b, err = cutBytes(b); err == nil {
			o.Best, err = model.DecodeBid(part)
		}
		o.HasBest = true
	}
	if err == nil && len(b) > 0 {
		err = fmt.Errorf("WinningBids: %d bytes after the state", len(b))
	}
	return o, err
}

func appendBytes(b, part []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(part))), part...)
}

func cutBytes(b []byte) (part, rest []byte, err error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, fmt.Errorf("WinningBids: state ends inside a field")
	}
	return b[n : n+int(l)], b[n+int(l):], nil
}
