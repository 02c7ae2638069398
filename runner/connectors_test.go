package runner

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/connector/all"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/wire"
)

// Two connectors that live in this file only: a source of numbers and an
// exactly-once sink into memory. Running them end to end shows that a new
// connector is its own code and one line in a registry: neither translate
// nor the runner names them.

const (
	numbersURN = "example:transform:numbers:v1"
	memoryURN  = "example:transform:memory_sink:v1"
)

// numbersConnector reads {"n": N} and emits "0" ... "N-1" as bytes,
// waiting halfway for a checkpoint to complete.
type numbersConnector struct{}

func (numbersConnector) URN() string { return numbersURN }

func (numbersConnector) Decode(t *connector.Transform) (connector.Config, []error) {
	var cfg struct{ N int }
	if err := json.Unmarshal(t.Payload(), &cfg); err != nil || cfg.N <= 0 {
		return nil, []error{fmt.Errorf("payload %q: want {\"n\": N > 0}", t.Payload())}
	}
	if err := t.Ports("a numbers source", 0, 1, 1); err != nil {
		return nil, []error{err}
	}
	return numbersStage(cfg.N), nil
}

type numbersStage int

func (numbersStage) Placement() connector.Placement { return connector.Placement{Parallelism: 1} }

func (n numbersStage) Build(*connector.BuildContext) (connector.Node, error) {
	return connector.Node{NewSource: func(int, *executor.Output) (executor.Source, error) {
		return &numbersSource{n: int(n), completed: make(chan struct{})}, nil
	}}, nil
}

// numbersSource emits its numbers one a batch, recording the next in
// every snapshot; halfway it waits, taking barriers, until a checkpoint
// has completed, so that the sink commits before the end of its input.
type numbersSource struct {
	n         int
	completed chan struct{}
	once      sync.Once
}

func (s *numbersSource) CheckpointComplete(context.Context, executor.BarrierID) error {
	s.once.Do(func() { close(s.completed) })
	return nil
}

// waitCheckpoint polls for barriers and completions until one completed.
func (s *numbersSource) waitCheckpoint(ctx context.Context, inj *executor.Injector) error {
	for {
		if _, err := inj.Poll(); err != nil {
			return err
		}
		select {
		case <-s.completed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (s *numbersSource) Run(ctx context.Context, out *executor.Output, inj *executor.Injector) error {
	next := 0
	if b := inj.Restored(); b != nil {
		var err error
		if next, err = strconv.Atoi(string(b)); err != nil {
			return err
		}
	}
	inj.OnSnapshot(func() ([]byte, error) { return []byte(strconv.Itoa(next)), nil })
	for ; next < s.n; next++ {
		if next == s.n/2 {
			if err := s.waitCheckpoint(ctx, inj); err != nil {
				return err
			}
		}
		v := strconv.Itoa(next)
		val := append(binary.AppendUvarint(nil, uint64(len(v))), v...)
		e := wire.AppendWindowedValue(nil, mtime.Now(), nil, []byte{wire.PaneNoFiring}, val)
		if err := out.Emit(ctx, 0, [][]byte{e}); err != nil {
			return err
		}
		if _, err := inj.Poll(); err != nil {
			return err
		}
	}
	return out.Watermark(ctx, mtime.MaxTimestamp)
}

// memoryConnector reads {"name": S} and commits its input's byte values,
// exactly once, to memory[S].
type memoryConnector struct{}

func (memoryConnector) URN() string { return memoryURN }

func (memoryConnector) Decode(t *connector.Transform) (connector.Config, []error) {
	var cfg struct{ Name string }
	if err := json.Unmarshal(t.Payload(), &cfg); err != nil || cfg.Name == "" {
		return nil, []error{fmt.Errorf("payload %q: want {\"name\": S}", t.Payload())}
	}
	if err := t.Ports("a memory sink", 1, 0, 0); err != nil {
		return nil, []error{err}
	}
	return memoryStage(cfg.Name), nil
}

type memoryStage string

func (memoryStage) Placement() connector.Placement { return connector.Placement{Store: true} }

func (m memoryStage) Build(b *connector.BuildContext) (connector.Node, error) {
	in := b.Inputs[0].Codec
	return connector.Node{NewOperator: func(sub int, _ *executor.Output) (executor.Operator, error) {
		name := fmt.Sprintf("%s[%d]", b.Stage, sub)
		return &twophase.Driver{Sink: &memorySink{name: string(m), in: in}, Name: "memory sink " + name,
			Pending: twophase.NewPending(b.Store, b.Namespace(sub), name), OnRetry: b.Job.Retried()}, nil
	}}, nil
}

// memory is what memory sinks committed, by name; committedEpochs makes
// their commits idempotent.
var memory = struct {
	sync.Mutex
	values    map[string][]string
	committed map[string]bool // run/epoch
}{values: map[string][]string{}, committed: map[string]bool{}}

// memorySink stages values in the store and appends them to memory at
// commit, once per (run, epoch).
type memorySink struct {
	name    string
	in      *wire.Codec
	staging twophase.Staging
}

func (s *memorySink) Open(_ context.Context, ss twophase.Session) error {
	s.staging = ss.Staging
	return nil
}

func (s *memorySink) Abort(context.Context, []twophase.Committable) error { return nil }

func (s *memorySink) Write(_ context.Context, epoch twophase.Epoch, elems [][]byte) error {
	var vals [][]byte
	for _, e := range elems {
		v, err := s.in.ValueOf(e)
		if err != nil {
			return err
		}
		vals = append(vals, v)
	}
	return s.staging.Append(epoch, vals)
}

func (s *memorySink) Prepare(context.Context, twophase.Epoch) ([]byte, error) { return []byte{}, nil }

func (s *memorySink) Commit(_ context.Context, cs []twophase.Committable) error {
	memory.Lock()
	defer memory.Unlock()
	for _, c := range cs {
		key := fmt.Sprintf("%s/%s/%d", s.name, c.Run, c.Epoch)
		if memory.committed[key] {
			continue
		}
		err := s.staging.Read(c.Epoch, c.Epoch+1, func(_ twophase.Epoch, v []byte) error {
			n, k := binary.Uvarint(v)
			memory.values[s.name] = append(memory.values[s.name], string(v[k:k+int(n)]))
			return nil
		})
		if err != nil {
			return err
		}
		memory.committed[key] = true
	}
	return nil
}

func (s *memorySink) Close() error { return nil }

func bytesIdentity(b []byte) []byte { return b }

func init() { register.Function1x1(bytesIdentity) }

// TestNewConnectorEndToEnd runs a job from the numbers source through an
// SDK ParDo into the memory sink, with checkpoints, on a server whose
// registry is weir's plus the two: every number is committed once, and the
// source's arrival delays are measured without it asking.
func TestNewConnectorEndToEnd(t *testing.T) {
	reg, err := connector.NewRegistry(append(allConnectors(), numbersConnector{}, memoryConnector{})...)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(&LocalExecutor{Parallelism: 2, StateDir: t.TempDir(), Connectors: reg},
		ServerOptions{StagingRoot: filepath.Join(os.TempDir(), "weir-staging")})
	if err := srv.Start("localhost:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.GracefulStop()
	endpoint := *jobopts.Endpoint
	*jobopts.Endpoint = srv.Endpoint()
	defer func() { *jobopts.Endpoint = endpoint }()
	for k, v := range map[string]string{CheckpointIntervalOption: "20ms", CheckpointDirOption: t.TempDir()} {
		beam.PipelineOptions.Set(k, v)
		defer beam.PipelineOptions.Set(k, "")
	}

	const n = 500
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	bytesT := typex.New(reflectx.ByteSlice)
	nums := beam.External(s, numbersURN, []byte(fmt.Sprintf(`{"n": %d}`, n)), nil, []beam.FullType{bytesT}, true)[0]
	beam.External(s, memoryURN, []byte(`{"name": "e2e"}`), []beam.PCollection{beam.ParDo(s, bytesIdentity, nums)}, nil, false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Execute(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	memory.Lock()
	got := slices.Clone(memory.values["e2e"])
	memory.Unlock()
	slices.SortFunc(got, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	var want []string
	for i := range n {
		want = append(want, strconv.Itoa(i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("memory sink committed %d values, want 0..%d once each", len(got), n-1)
	}
	jobs := srv.Jobs()
	if c := report(jobs[len(jobs)-1]).Completed; c == 0 {
		t.Error("no checkpoint completed: the sink committed at the end of its input only")
	}
	d := res.Metrics().Query(func(r beam.MetricResult) bool {
		return r.Namespace() == "weir" && r.Name() == "arrival_delay_ms"
	})
	var arrivals int64
	for _, dist := range d.Distributions() {
		arrivals += dist.Committed.Count
	}
	if arrivals != n {
		t.Errorf("arrival_delay_ms distributions %+v, want the source's %d elements", d.Distributions(), n)
	}
}

// allConnectors are weir's own connectors, as connector/all lists them.
func allConnectors() []connector.Connector {
	var cs []connector.Connector
	for _, urn := range all.Registry().URNs() {
		c, _ := all.Registry().Lookup(urn)
		cs = append(cs, c)
	}
	return cs
}
