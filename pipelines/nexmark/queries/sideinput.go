package queries

import (
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/model"
)

// The bounded side input join: every bid, its extra replaced by the row of
// a static table its bidder id (modulo the table's size) looks up,
// modelling stream enrichment (BoundedSideInputJoin). In SQL:
//
//	SELECT bid.*, sideInput.* FROM bid, sideInput WHERE bid.id = sideInput.id
//
// The table is Beam's generated one (NexmarkUtils.prepareSideInput,
// DIRECT): rows 0 to SideInputRowCount-1, each mapping n to its decimal
// string. Beam features: a map side input (View.asMap). The Go SDK has
// no map view: its KV side inputs are multimaps, whose lookups are one
// state request each (on Prism 12 ms each, 11 s for 1,000 events), so the
// DoFn reads the table as an iterable when a bundle starts and keeps it as a
// map, which is what Beam Java's View.asMap gives a DoFn.
func init() {
	register.DoFn2x0[[]byte, func(int64, string)](&sideTableFn{})
	register.DoFn3x0[model.Bid, func(*int64, *string) bool, func(model.Bid)](&sideJoinFn{})
	register.Emitter2[int64, string]()
	register.Iter2[int64, string]()
	add(Query{Name: "bounded_side_input_join", Title: "Bounded side input join", Deterministic: true, Build: buildSideJoin})
}

func buildSideJoin(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection {
	s = s.Scope("BoundedSideInputJoin")
	table := beam.ParDo(s.Scope("SideInput"), &sideTableFn{Rows: int64(cfg.SideInputRowCount)}, beam.Impulse(s))
	return beam.ParDo(s.Scope("JoinToFiles"), &sideJoinFn{Rows: int64(cfg.SideInputRowCount)}, JustBids(s, events),
		beam.SideInput{Input: table})
}

type sideTableFn struct {
	Rows int64
}

func (fn *sideTableFn) ProcessElement(_ []byte, emit func(int64, string)) {
	for n := range fn.Rows {
		emit(n, strconv.FormatInt(n, 10))
	}
}

type sideJoinFn struct {
	Rows  int64
	table map[int64]string // the side input, read when a bundle starts
}

func (fn *sideJoinFn) StartBundle(rows func(*int64, *string) bool, _ func(model.Bid)) {
	fn.table = map[int64]string{}
	var k int64
	var v string
	for rows(&k, &v) {
		fn.table[k] = v
	}
}

func (fn *sideJoinFn) ProcessElement(b model.Bid, _ func(*int64, *string) bool, emit func(model.Bid)) {
	b.Extra = fn.table[b.Bidder%fn.Rows] // a missing row leaves "", as Beam's null
	emit(b)
}
