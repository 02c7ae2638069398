// Command wordcount counts the words of a small embedded text on weir and
// prints the most frequent ones. It is the README's first example:
//
//	go run ./pipelines/wordcount --runner=weir
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"regexp"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	_ "github.com/weir-runner/weir/runner" // registers --runner=weir
)

const text = `It was the best of times, it was the worst of times,
it was the age of wisdom, it was the age of foolishness,
it was the epoch of belief, it was the epoch of incredulity,
it was the season of Light, it was the season of Darkness,
it was the spring of hope, it was the winter of despair.`

var wordRE = regexp.MustCompile(`[a-zA-Z']+`)

func extract(line string, emit func(string)) {
	for _, w := range wordRE.FindAllString(line, -1) {
		emit(strings.ToLower(w))
	}
}

func format(w string, n int) string { return fmt.Sprintf("%s: %d", w, n) }

// collect gathers every formatted count into one slice, printed by main.
func collect(_ []byte, counts func(*string) bool, emit func([]string)) {
	var all []string
	var s string
	for counts(&s) {
		all = append(all, s)
	}
	emit(all)
}

func printAll(lines []string) {
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
}

func init() {
	register.Function1x0(printAll)
	register.Function2x0(extract)
	register.Function2x1(format)
	register.Function3x0(collect)
	register.Emitter1[string]()
	register.Emitter1[[]string]()
	register.Iter1[string]()
}

func main() {
	flag.Parse()
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	lines := beam.CreateList(s, strings.Split(text, "\n"))
	words := beam.ParDo(s, extract, lines)
	counts := stats.Count(s, words)
	formatted := beam.ParDo(s, format, counts)
	all := beam.ParDo(s, collect, beam.Impulse(s), beam.SideInput{Input: formatted})
	beam.ParDo0(s, printAll, all)
	if _, err := beamx.RunWithMetrics(context.Background(), p); err != nil {
		log.Fatalf("wordcount: %v", err)
	}
}
