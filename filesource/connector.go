package filesource

import (
	"encoding/json"
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/joboptions"
)

// Connector runs fileio.WatchURN: a folder watch in one subtask.
type Connector struct{}

var (
	_ connector.Connector = Connector{}
	_ connector.Paths     = Connector{}
)

// urnRow is Beam's row coder, of a watch's output in files mode.
const urnRow = "beam:coder:row:v1"

// URN implements connector.Connector.
func (Connector) URN() string { return fileio.WatchURN }

// Decode implements connector.Connector: the payload, and one output in
// the global window of rows of fileio.FileSchema (files mode) or
// KV<bytes, bytes> (lines mode).
func (Connector) Decode(t *connector.Transform) (connector.Config, []error) {
	cfg, err := fileio.DecodeWatch(t.Payload())
	if err != nil {
		return nil, []error{err}
	}
	if err := t.Ports("a file watch", 0, 1, 1); err != nil {
		return nil, []error{err}
	}
	out := t.Outputs()[0]
	check := t.CheckKVBytes
	if !cfg.Lines() {
		check = func(pc string) error { return fileRows(t, pc) }
	}
	var errs []error
	if err := check(out); err != nil {
		errs = append(errs, fmt.Errorf("output: %w", err))
	}
	if err := t.CheckGlobalWindow(out); err != nil {
		errs = append(errs, err)
	}
	if errs != nil {
		return nil, errs
	}
	return &stage{cfg: cfg}, nil
}

// Paths implements connector.Paths: the folder watched. It decodes the
// payload without checking the rest, so a folder outside a confined
// server's is refused first.
func (Connector) Paths(t *connector.Transform) (map[string]string, error) {
	var cfg fileio.WatchConfig
	if err := json.Unmarshal(t.Payload(), &cfg); err != nil {
		return nil, fmt.Errorf("file watch payload: %w", err)
	}
	return map[string]string{"dir": cfg.Dir}, nil
}

// fileRows checks that a PCollection's coder is a row coder of
// fileio.FileSchema: field names, order and types; not ids or options,
// which an SDK may change.
func fileRows(t *connector.Transform, pcoll string) error {
	pc, err := t.PColl(pcoll)
	if err != nil {
		return err
	}
	c := t.Coder(pc.GetCoderId())
	if c.GetSpec().GetUrn() != urnRow {
		return fmt.Errorf("PCollection %q has coder %q (%s), not a row of file metadata (path, size_bytes, last_modified_millis)",
			pcoll, pc.GetCoderId(), t.DescribeCoder(pc.GetCoderId()))
	}
	var got pipepb.Schema
	if err := proto.Unmarshal(c.GetSpec().GetPayload(), &got); err != nil {
		return fmt.Errorf("PCollection %q: row coder %q: bad schema: %w", pcoll, pc.GetCoderId(), err)
	}
	want := fileio.FileSchema().GetFields()
	if len(got.GetFields()) != len(want) {
		return fmt.Errorf("PCollection %q: row coder %q has %d fields, want %d (path, size_bytes, last_modified_millis)",
			pcoll, pc.GetCoderId(), len(got.GetFields()), len(want))
	}
	for i, w := range want {
		g := got.GetFields()[i]
		if g.GetName() != w.GetName() || g.GetType().GetNullable() || g.GetType().GetAtomicType() != w.GetType().GetAtomicType() {
			return fmt.Errorf("PCollection %q: row coder %q: field %d is %s %v, want %s %v (not nullable)",
				pcoll, pc.GetCoderId(), i, g.GetName(), g.GetType().GetTypeInfo(), w.GetName(), w.GetType().GetAtomicType())
		}
	}
	return nil
}

// stage is a decoded folder watch.
type stage struct{ cfg *fileio.WatchConfig }

// Config returns the watch's configuration.
func (s *stage) Config() *fileio.WatchConfig { return s.cfg }

// Placement implements connector.Config: one subtask lists the folder, so
// that each file is read once and the watermark is over every file.
func (s *stage) Placement() connector.Placement { return connector.Placement{Parallelism: 1} }

// Build implements connector.Config.
func (s *stage) Build(b *connector.BuildContext) (connector.Node, error) {
	cfg := s.cfg
	if !cfg.Bounded() && !b.Job.Checkpoints() {
		b.Job.Warnf("file watch %s: without --%s the files read are not remembered: a restarted job reads %s again from the start",
			b.Stage, joboptions.CheckpointInterval, cfg.Dir)
	}
	retried := b.Job.Retried()
	return connector.Node{NewSource: func(int, *executor.Output) (executor.Source, error) {
		return &Source{Config: cfg, Folder: OSFolder(cfg.Dir), Name: b.Stage, Drain: b.Job.Drain(),
			Warnf: b.Job.Warnf, Retried: retried}, nil
	}}, nil
}
