package queries

import (
	"math"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

func init() {
	register.Function2x0(justBids)
	register.Function2x0(justAuctions)
	register.Function2x0(justPersons)
	register.Emitter1[model.Bid]()
	register.Emitter1[model.Auction]()
	register.Emitter1[model.Person]()
}

// JustBids, JustAuctions and JustPersons keep one kind of event
// (NexmarkQueryUtil.JUST_BIDS, ...), each at its event's time.
func JustBids(s beam.Scope, events beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("JustBids"), justBids, events)
}

func JustAuctions(s beam.Scope, events beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("JustAuctions"), justAuctions, events)
}

func JustPersons(s beam.Scope, events beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("JustPersons"), justPersons, events)
}

func justBids(e model.Event, emit func(model.Bid)) {
	if e.Bid != nil {
		emit(*e.Bid)
	}
}

func justAuctions(e model.Event, emit func(model.Auction)) {
	if e.NewAuction != nil {
		emit(*e.NewAuction)
	}
}

func justPersons(e model.Event, emit func(model.Person)) {
	if e.NewPerson != nil {
		emit(*e.NewPerson)
	}
}

func seconds(n int64) time.Duration { return time.Duration(n) * time.Second }

// javaRound is Java's Math.round: half rounds up.
func javaRound(x float64) int64 {
	f := math.Floor(x)
	if x-f >= 0.5 {
		f++
	}
	return int64(f)
}

// instant prints Unix milliseconds as Java's Instant.toString does.
func instant(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
