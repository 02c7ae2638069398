package filesink

import (
	"fmt"

	"github.com/weir-runner/weir/connector"
	"github.com/weir-runner/weir/executor"
	"github.com/weir-runner/weir/fileio"
	"github.com/weir-runner/weir/twophase"
	"github.com/weir-runner/weir/wire"
)

// Connector runs fileio.WriteURN: an exactly-once file write on every
// subtask. Without checkpoints it commits at the end of its input.
type Connector struct{}

var (
	_ connector.Connector = Connector{}
	_ connector.Paths     = Connector{}
)

// URN implements connector.Connector.
func (Connector) URN() string { return fileio.WriteURN }

// Decode implements connector.Connector: the payload, and one input of
// bytes or strings.
func (Connector) Decode(t *connector.Transform) (connector.Config, []error) {
	cfg, err := fileio.DecodeWrite(t.Payload())
	if err != nil {
		return nil, []error{err}
	}
	if err := t.Ports("a file write", 1, 0, 0); err != nil {
		return nil, []error{err}
	}
	pcoll := t.Inputs()[0]
	pc, err := t.PColl(pcoll)
	if err != nil {
		return nil, []error{err}
	}
	switch urn := t.Coder(pc.GetCoderId()).GetSpec().GetUrn(); urn {
	case wire.URNBytes, wire.URNStringUTF8:
	default:
		return nil, []error{fmt.Errorf("input PCollection %q has coder %q (%s), not bytes or string", pcoll, pc.GetCoderId(), t.DescribeCoder(pc.GetCoderId()))}
	}
	return &stage{cfg: cfg}, nil
}

// Paths implements connector.Paths: the folder the files go to.
func (Connector) Paths(t *connector.Transform) (map[string]string, error) {
	cfg, err := fileio.DecodeWrite(t.Payload())
	if err != nil {
		return nil, err
	}
	return map[string]string{"dir": cfg.Dir}, nil
}

// stage is a decoded file write.
type stage struct{ cfg *fileio.WriteConfig }

// Config returns the write's configuration.
func (s *stage) Config() *fileio.WriteConfig { return s.cfg }

// Placement implements connector.Config: the names of the files not yet
// committed wait in the store.
func (s *stage) Placement() connector.Placement { return connector.Placement{Store: true} }

// Build implements connector.Config.
func (s *stage) Build(b *connector.BuildContext) (connector.Node, error) {
	if len(b.Inputs) != 1 {
		return connector.Node{}, fmt.Errorf("file sink %s: %d inputs, want 1", b.Stage, len(b.Inputs))
	}
	in := b.Inputs[0].Codec
	return connector.Node{NewOperator: func(sub int, _ *executor.Output) (executor.Operator, error) {
		name := fmt.Sprintf("%s[%d]", b.Stage, sub)
		return &twophase.Driver{Sink: &Sink{Config: s.cfg, Name: b.Stage, Subtask: sub, In: in},
			Pending: twophase.NewPending(b.Store, b.Namespace(sub), name),
			Name:    fmt.Sprintf("file sink %s: dir %q", name, s.cfg.Dir), OnRetry: b.Job.Retried()}, nil
	}}, nil
}
