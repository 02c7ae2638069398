package queries_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"

	"github.com/weir-runner/weir/pipelines/nexmark/config"
	"github.com/weir-runner/weir/pipelines/nexmark/queries"
	"github.com/weir-runner/weir/pipelines/nexmark/source"
	"github.com/weir-runner/weir/runner"
	"github.com/weir-runner/weir/validatesrunner"
)

// The harness runs a query on weir or Prism, both in this process with
// LOOPBACK workers, and collects its results as printed strings. The
// workers run in this process too, so a DoFn can hand results to the
// test through a package variable, keyed by run.

func TestMain(m *testing.M) {
	beam.Init()
	os.Exit(m.Run())
}

func init() {
	beam.RegisterType(reflect.TypeOf((*collectFn)(nil)).Elem())
}

var (
	collectedMu sync.Mutex
	collected   = map[string][]string{}
	runSeq      atomic.Int64
)

type collectFn struct {
	Run string
}

func (fn *collectFn) ProcessElement(x beam.T) {
	collectedMu.Lock()
	defer collectedMu.Unlock()
	collected[fn.Run] = append(collected[fn.Run], fmt.Sprint(x))
}

// servers are the job servers, started on first use: weir's by its
// in-process entry (runner.Execute, which starts one on the first call
// and reuses it while jobopts.Endpoint names it), Prism's by
// prism.CreateJobServer. Both entries read the SDK's global endpoint
// flag, so runs take turns (runMu) and each sets it.
var (
	runMu   sync.Mutex
	weirEP  string
	prismEP string
)

func execute(ctx context.Context, runnerName string, p *beam.Pipeline) error {
	runMu.Lock()
	defer runMu.Unlock()
	*jobopts.EnvironmentType = "LOOPBACK"
	switch runnerName {
	case "weir":
		*jobopts.Endpoint = weirEP
		_, err := runner.Execute(ctx, p)
		weirEP = *jobopts.Endpoint
		return err
	case "prism":
		if prismEP == "" {
			port, err := validatesrunner.FreePort()
			if err != nil {
				return err
			}
			if _, err := prism.CreateJobServer(context.Background(), prism.Options{Port: port}); err != nil {
				return fmt.Errorf("starting Prism: %w", err)
			}
			prismEP = fmt.Sprintf("localhost:%d", port)
		}
		*jobopts.Endpoint = prismEP
		_, err := universal.Execute(ctx, p)
		return err
	}
	return fmt.Errorf("no runner %q", runnerName)
}

// run runs query q over the events of cfg on runnerName and returns its
// results, normalised if the query says how, sorted.
func run(t *testing.T, runnerName string, q queries.Query, cfg config.Config, streaming bool) ([]string, error) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	var events beam.PCollection
	if streaming {
		events = source.Unbounded(s, cfg)
	} else {
		events = source.Bounded(s, cfg)
	}
	id := fmt.Sprintf("%s-%s-%d", runnerName, q.Name, runSeq.Add(1))
	beam.ParDo0(s, &collectFn{Run: id}, q.Build(s, cfg, events))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := execute(ctx, runnerName, p); err != nil {
		return nil, err
	}
	collectedMu.Lock()
	out := collected[id]
	delete(collected, id)
	collectedMu.Unlock()
	if q.Normalise != nil {
		out = q.Normalise(out)
	}
	sort.Strings(out)
	return out, nil
}

// diff describes how two sorted multisets differ, or returns "".
func diff(got, want []string) string {
	var only1, only2 []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			only1 = append(only1, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			only2 = append(only2, want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(only1)+len(only2) == 0 {
		return ""
	}
	return fmt.Sprintf("%d results against %d; %d only in the first, e.g. %v; %d only in the second, e.g. %v",
		len(got), len(want), len(only1), head(only1), len(only2), head(only2))
}

func head(xs []string) []string {
	if len(xs) > 3 {
		return xs[:3]
	}
	return xs
}
