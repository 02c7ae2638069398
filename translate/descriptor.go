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
	main := s.MainInput()
	var err error
	if d.Transforms[s.Source], err = dataPort(URNDataSource, s.Source, main, p.PColls[main].sourceCoder(), endpoint); err != nil {
		return nil, err
	}
	for out, sink := range s.Sinks {
		if d.Transforms[sink], err = dataPort(URNDataSink, sink, out, p.PColls[out].WireCoder, endpoint); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// dataPort returns a descriptor's data source (urn URNDataSource) or sink
// (URNDataSink) transform id, which moves pcoll between the runner at
// endpoint and the SDK in wire coder coder.
func dataPort(urn, id, pcoll, coder string, endpoint *pipepb.ApiServiceDescriptor) (*pipepb.PTransform, error) {
	pl, err := proto.Marshal(&fnpb.RemoteGrpcPort{ApiServiceDescriptor: endpoint, CoderId: coder})
	if err != nil {
		return nil, err
	}
	t := &pipepb.PTransform{UniqueName: id, Spec: &pipepb.FunctionSpec{Urn: urn, Payload: pl}}
	if urn == URNDataSource {
		t.Outputs = map[string]string{"out": pcoll}
	} else {
		t.Inputs = map[string]string{"in": pcoll}
	}
	return t, nil
}

// sourceCoder is the wire coder SDK data sources read pc in.
func (pc *PColl) sourceCoder() string {
	if pc.SourceCoder != "" {
		return pc.SourceCoder
	}
	return pc.WireCoder
}
