package translate

import (
	"fmt"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// Descriptor builds the process bundle descriptor of an SDK stage whose data
// and state services are at endpoint.
func (p *Plan) Descriptor(s *Stage, endpoint *pipepb.ApiServiceDescriptor) (*fnpb.ProcessBundleDescriptor, error) {
	if s.Kind != KindSDK {
		return nil, fmt.Errorf("translate: stage %s is %v, not an SDK stage", s.ID, s.Kind)
	}
	d := &fnpb.ProcessBundleDescriptor{
		Id:                        string(s.ID),
		Transforms:                map[string]*pipepb.PTransform{},
		Pcollections:              map[string]*pipepb.PCollection{},
		WindowingStrategies:       p.Components.GetWindowingStrategies(),
		Coders:                    p.Components.GetCoders(),
		Environments:              p.Components.GetEnvironments(),
		StateApiServiceDescriptor: endpoint,
		TimerApiServiceDescriptor: endpoint,
	}
	lpColl := func(id string) {
		pc := proto.Clone(p.Components.Pcollections[id]).(*pipepb.PCollection)
		if rp, ok := p.PColls[id]; ok {
			pc.CoderId = p.elementCoder(rp.ID)
		}
		d.Pcollections[id] = pc
	}
	for _, tid := range s.Transforms {
		t := p.Components.Transforms[tid]
		d.Transforms[tid] = t
		for _, pc := range t.GetInputs() {
			lpColl(pc)
		}
		for _, pc := range t.GetOutputs() {
			lpColl(pc)
		}
	}
	port := func(coder string) ([]byte, error) {
		return proto.Marshal(&fnpb.RemoteGrpcPort{ApiServiceDescriptor: endpoint, CoderId: coder})
	}
	main := s.MainInput()
	src := p.PColls[main].WireCoder
	if c := p.PColls[main].SourceCoder; c != "" {
		src = c
	}
	pl, err := port(src)
	if err != nil {
		return nil, err
	}
	d.Transforms[s.Source] = &pipepb.PTransform{UniqueName: s.Source,
		Spec: &pipepb.FunctionSpec{Urn: URNDataSource, Payload: pl}, Outputs: map[string]string{"out": main}}
	for out, sink := range s.Sinks {
		pl, err := port(p.PColls[out].WireCoder)
		if err != nil {
			return nil, err
		}
		d.Transforms[sink] = &pipepb.PTransform{UniqueName: sink,
			Spec: &pipepb.FunctionSpec{Urn: URNDataSink, Payload: pl}, Inputs: map[string]string{"in": out}}
	}
	return d, nil
}
