package queries

import (
	"context"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 3, local item suggestion: who sells in Oregon, Idaho or
// California in category 10, and which auctions (Query3). In CQL:
//
//	SELECT Istream(P.name, P.city, P.state, A.id)
//	FROM Auction A [ROWS UNBOUNDED], Person P [ROWS UNBOUNDED]
//	WHERE A.seller = P.id AND (P.state = `OR' OR P.state = `ID' OR P.state = `CA')
//	  AND A.category = 10;
//
// A stateful join in the global window, keyed by person: a new person is
// kept in value state and joined with every auction of theirs that
// arrives later; an auction that arrives before its seller waits in bag
// state. An event-time timer, reset by every event of the key, clears
// both MaxAuctionsWaitingTime after the latest. Beam features: Flatten,
// user state (value, bag), event-time timers.
func init() {
	register.Function2x0(q3KeyAuction)
	register.Function2x0(q3KeyPerson)
	register.DoFn6x1[context.Context, state.Provider, timers.Provider, int64, model.Event, func(model.NameCityStateID), error](&q3Join{})
	register.Emitter2[int64, model.Event]()
	register.Emitter1[model.NameCityStateID]()
	add(Query{Name: "3", Title: "Local item suggestion", Deterministic: true, Build: buildQ3})
}

var (
	q3NewPerson  = beam.NewCounter("Query3", "newPerson")
	q3NewAuction = beam.NewCounter("Query3", "newAuction")
	q3Fatal      = beam.NewCounter("Query3", "fatal")
)

func buildQ3(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("Query3")
	auctions := beam.ParDo(s.Scope("InCategory"), q3KeyAuction, JustAuctions(s, events))
	persons := beam.ParDo(s.Scope("InState"), q3KeyPerson, JustPersons(s, events))
	both := beam.Flatten(s, auctions, persons)
	return beam.ParDo(s.Scope("Join"), &q3Join{
		MaxWaitSec: int64(cfg.MaxAuctionsWaitingTime),
		Person:     state.MakeValueState[model.Person]("person"),
		Auctions:   state.MakeBagState[model.Auction]("auctions"),
		Expiry:     timers.InEventTime("stateExpiring"),
	}, both)
}

func q3KeyAuction(a model.Auction, emit func(int64, model.Event)) {
	if a.Category == 10 {
		emit(a.Seller, model.Event{NewAuction: &a})
	}
}

func q3KeyPerson(p model.Person, emit func(int64, model.Event)) {
	if p.State == "OR" || p.State == "ID" || p.State == "CA" {
		emit(p.ID, model.Event{NewPerson: &p})
	}
}

type q3Join struct {
	MaxWaitSec int64
	Person     state.Value[model.Person]
	Auctions   state.Bag[model.Auction]
	Expiry     timers.EventTime
}

func (fn *q3Join) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, _ int64, e model.Event, emit func(model.NameCityStateID)) error {
	person, known, err := fn.Person.Read(sp)
	if err != nil {
		return err
	}
	switch {
	case e.NewPerson != nil:
		if known { // ids are unique: a second person is a bug upstream
			q3Fatal.Inc(ctx, 1)
			break
		}
		q3NewPerson.Inc(ctx, 1)
		if err := fn.Person.Write(sp, *e.NewPerson); err != nil {
			return err
		}
		pending, _, err := fn.Auctions.Read(sp)
		if err != nil {
			return err
		}
		for _, a := range pending {
			emit(join(a, *e.NewPerson))
		}
		if err := fn.Auctions.Clear(sp); err != nil {
			return err
		}
	case e.NewAuction != nil:
		q3NewAuction.Inc(ctx, 1)
		if known {
			emit(join(*e.NewAuction, person))
		} else if err := fn.Auctions.Add(sp, *e.NewAuction); err != nil {
			return err
		}
	default:
		q3Fatal.Inc(ctx, 1)
		return nil
	}
	expiry := time.UnixMilli(e.Timestamp() + fn.MaxWaitSec*1000)
	fn.Expiry.Set(tp, expiry, timers.WithNoOutputTimestamp())
	return nil
}

func (fn *q3Join) OnTimer(sp state.Provider, _ timers.Provider, _ int64, _ timers.Context, _ func(model.NameCityStateID)) error {
	if err := fn.Person.Clear(sp); err != nil {
		return err
	}
	return fn.Auctions.Clear(sp)
}

func join(a model.Auction, p model.Person) model.NameCityStateID {
	return model.NameCityStateID{Name: p.Name, City: p.City, State: p.State, ID: a.ID}
}
