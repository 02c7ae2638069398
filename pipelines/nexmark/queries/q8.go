package queries

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// Query 8, monitor new users: the people who joined and opened auctions
// in the same fixed window of WindowSizeSec, with each auction's reserve
// (Query8). In CQL:
//
//	SELECT Rstream(P.id, P.name, A.reserve)
//	FROM Person [RANGE 12 HOUR] P, Auction [RANGE 12 HOUR] A
//	WHERE P.id = A.seller;
//
// Beam features: fixed windows, CoGroupByKey.
func init() {
	register.Function2x0(q8PersonByID)
	register.Function2x0(q8AuctionBySeller)
	register.Function4x1(q8Select)
	register.Emitter2[int64, model.Person]()
	register.Emitter2[int64, model.Auction]()
	register.Iter1[model.Person]()
	register.Iter1[model.Auction]()
	register.Emitter1[model.IDNameReserve]()
	add(Query{Name: "8", Title: "Monitor new users", Deterministic: true, Build: buildQ8})
}

func buildQ8(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("Query8")
	fixed := window.NewFixedWindows(seconds(cfg.WindowSizeSec))
	persons := beam.ParDo(s.Scope("PersonByID"), q8PersonByID, beam.WindowInto(s.Scope("WindowPersons"), fixed, JustPersons(s, events)))
	auctions := beam.ParDo(s.Scope("AuctionBySeller"), q8AuctionBySeller, beam.WindowInto(s.Scope("WindowAuctions"), fixed, JustAuctions(s, events)))
	return beam.ParDo(s.Scope("Select"), q8Select, beam.CoGroupByKey(s, persons, auctions))
}

func q8PersonByID(p model.Person, emit func(int64, model.Person)) { emit(p.ID, p) }

func q8AuctionBySeller(a model.Auction, emit func(int64, model.Auction)) { emit(a.Seller, a) }

func q8Select(id int64, persons func(*model.Person) bool, auctions func(*model.Auction) bool, emit func(model.IDNameReserve)) error {
	var p, extra model.Person
	if !persons(&p) {
		return nil // not a new person of this window
	}
	if persons(&extra) { // Beam's getOnly fails here too: ids are unique
		return fmt.Errorf("Query8: two persons with id %d in one window: %v and %v", id, p, extra)
	}
	var a model.Auction
	for auctions(&a) {
		emit(model.IDNameReserve{ID: p.ID, Name: p.Name, Reserve: a.Reserve})
	}
	return nil
}
