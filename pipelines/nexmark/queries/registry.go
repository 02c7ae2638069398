package queries

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
)

// Query is one of the suite's queries.
type Query struct {
	// Name is what --query takes: "0" to "12", or "bounded_side_input_join".
	Name string
	// Title is the query's name in Beam's suite.
	Title string
	// Build adds the query to s over events, a PCollection of
	// model.Event, and returns its results.
	Build func(s beam.Scope, cfg config.Config, events beam.PCollection) beam.PCollection
	// Deterministic reports whether a run's results are a function of the
	// events alone, as a multiset. The others' panes depend on bundling or
	// the wall clock (the trigger-driven 6, 10 and 12); Normalise reduces
	// those to what every correct run agrees on.
	Deterministic bool
	// Normalise, for a query that is not deterministic, maps the printed
	// results of a run to what any correct run gives. Nil for the rest.
	Normalise func(results []string) []string
}

var all = map[string]Query{}

func add(q Query) { all[q.Name] = q }

// Lookup returns the query named name.
func Lookup(name string) (Query, error) {
	q, ok := all[name]
	if !ok {
		return Query{}, fmt.Errorf("nexmark: no query %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return q, nil
}

// Names lists the queries, 0 to 12 and then the others.
func Names() []string {
	var out []string
	for n := range all {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return a < b
	})
	return out
}
