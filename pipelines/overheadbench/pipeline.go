package main

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// The two pipelines measured. Both start from an Impulse whose one element
// a generator turns into n small integers, so that the input costs the
// runner nothing: what it spends is on moving what the SDK emits.
//
//   - pardo: the integers through three ParDos into a counting sink, all
//     fused into one stage. The runner moves no element; what it spends
//     is per job and per bundle.
//   - gbk: the integers keyed by i mod keys, grouped by key, and the
//     values of each group counted. Every element crosses the runner
//     twice: out of the SDK into the group-by-key's store, and back in
//     its group.
//
// The counting DoFns report what they saw in counters, which the client
// checks against n and keys, so that a run that lost or doubled elements
// fails instead of being timed.

const ns = "overheadbench"

// genFn emits the integers 0 to N-1.
type genFn struct{ N int }

func (f *genFn) ProcessElement(_ []byte, emit func(int)) {
	for i := range f.N {
		emit(i)
	}
}

// genKVFn emits i mod Keys, i for i in 0 to N-1.
type genKVFn struct{ N, Keys int }

func (f *genKVFn) ProcessElement(_ []byte, emit func(int, int)) {
	for i := range f.N {
		emit(i%f.Keys, i)
	}
}

func addOne(x int) int { return x + 1 }

func double(x int) int { return 2 * x }

// positive keeps every element (the generator's are all positive by now)
// but has to look at each.
func positive(x int, emit func(int)) {
	if x > 0 {
		emit(x)
	}
}

// countFn counts its elements and adds them to the elements counter once a
// bundle, so that counting costs the SDK one addition an element.
type countFn struct{ n int64 }

func (f *countFn) StartBundle() { f.n = 0 }

func (f *countFn) ProcessElement(int) { f.n++ }

func (f *countFn) FinishBundle(ctx context.Context) {
	beam.NewCounter(ns, "elements").Inc(ctx, f.n)
}

// countGroup counts a group's values.
func countGroup(ctx context.Context, _ int, values func(*int) bool) {
	n, v := int64(0), 0
	for values(&v) {
		n++
	}
	beam.NewCounter(ns, "elements").Inc(ctx, n)
	beam.NewCounter(ns, "groups").Inc(ctx, 1)
}

func init() {
	register.DoFn2x0[[]byte, func(int)](&genFn{})
	register.DoFn2x0[[]byte, func(int, int)](&genKVFn{})
	register.Function1x1(addOne)
	register.Function1x1(double)
	register.Function2x0(positive)
	register.DoFn1x0[int](&countFn{})
	register.Function3x0(countGroup)
	register.Emitter1[int]()
	register.Emitter2[int, int]()
	register.Iter1[int]()
	beam.RegisterType(reflect.TypeOf((*genFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*genKVFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*countFn)(nil)).Elem())
}

// build returns the pipeline of test and the counter values it must end
// with.
func build(test string, n, keys int) (*beam.Pipeline, map[string]int64, error) {
	p, s := beam.NewPipelineWithRoot()
	imp := beam.Impulse(s)
	switch test {
	case "pardo":
		xs := beam.ParDo(s, &genFn{N: n}, imp)
		xs = beam.ParDo(s, addOne, xs)
		xs = beam.ParDo(s, double, xs)
		xs = beam.ParDo(s, positive, xs)
		beam.ParDo0(s, &countFn{}, xs)
		return p, map[string]int64{"elements": int64(n)}, nil
	case "gbk":
		kvs := beam.ParDo(s, &genKVFn{N: n, Keys: keys}, imp)
		beam.ParDo0(s, countGroup, beam.GroupByKey(s, kvs))
		return p, map[string]int64{"elements": int64(n), "groups": int64(min(n, keys))}, nil
	}
	return nil, nil, fmt.Errorf("unknown test %q (pardo, gbk)", test)
}
