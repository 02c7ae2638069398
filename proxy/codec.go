package proxy

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/mem"
)

// frame is one message as it travels: its bytes, not decoded.
type frame struct {
	data []byte
}

// rawCodec moves frames as they are. It is named "proto" so the content
// type on both sides stays application/grpc+proto.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("weir proxy: cannot send a %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(f.data)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("weir proxy: cannot receive into a %T", v)
	}
	// Materialize copies: gRPC frees data when this returns.
	f.data = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

func stagingEndpoint(addr string) *pipepb.ApiServiceDescriptor {
	return &pipepb.ApiServiceDescriptor{Url: addr}
}
