package runner

import (
	"context"
	"errors"
	"fmt"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/checkpoint"
)

// Beam's JobService has no savepoint call, so weir serves one of its own
// beside it: weir.v1.Savepoints/Take. Its messages are protobuf Structs
// (the fields of SavepointRequest and SavepointResult), which keeps weir
// free of generated code for one call.
const savepointMethod = "/weir.v1.Savepoints/Take"

// SavepointRequest asks for a savepoint of a running job.
type SavepointRequest struct {
	JobID string
	// Dir is the folder the savepoint goes into; default: savepoints
	// beside the job's checkpoint folder.
	Dir string
	// Stop stops the job once the savepoint is taken and its sinks have
	// committed it; the job ends CANCELLED.
	Stop bool
}

// savepointsServer is the handler type of the weir.v1.Savepoints service.
type savepointsServer interface {
	takeSavepoint(ctx context.Context, req *structpb.Struct) (*structpb.Struct, error)
}

var savepointsDesc = grpc.ServiceDesc{
	ServiceName: "weir.v1.Savepoints",
	HandlerType: (*savepointsServer)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Take", Handler: takeSavepointHandler}},
	Metadata:    "weir/runner/savepoint_service.go",
}

func takeSavepointHandler(srv any, ctx context.Context, dec func(any) error, intercept grpc.UnaryServerInterceptor) (any, error) {
	in := new(structpb.Struct)
	if err := dec(in); err != nil {
		return nil, err
	}
	s := srv.(savepointsServer)
	if intercept == nil {
		return s.takeSavepoint(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: savepointMethod}
	return intercept(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		return s.takeSavepoint(ctx, req.(*structpb.Struct))
	})
}

// takeSavepoint serves Take: it waits for the savepoint (and, with stop,
// for its sinks to commit it, then cancels the job).
func (s *Server) takeSavepoint(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error) {
	f := in.GetFields()
	req := SavepointRequest{JobID: f["job_id"].GetStringValue(), Dir: f["dir"].GetStringValue(), Stop: f["stop"].GetBoolValue()}
	j, err := s.lookup("Savepoint", req.JobID)
	if err != nil {
		return nil, err
	}
	res, err := j.TakeSavepoint(ctx, req.Dir, req.Stop)
	if err != nil {
		code := codes.Aborted
		switch {
		case errors.Is(err, errSavepointBusy):
			code = codes.Unavailable
		case errors.Is(err, errNoSavepoints):
			code = codes.FailedPrecondition
		case ctx.Err() != nil:
			code = status.FromContextError(ctx.Err()).Code()
		}
		return nil, status.Errorf(code, "savepoint of job %s: %v", req.JobID, err)
	}
	if req.Stop {
		j.Logf(jobpb.JobMessage_JOB_MESSAGE_BASIC, "stopping with savepoint %s", res.Path)
		s.cancelJob(j)
	}
	return structpb.NewStruct(map[string]any{"path": res.Path, "checkpoint": float64(res.Checkpoint)})
}

// TakeSavepoint calls weir.v1.Savepoints/Take on a weir job service.
func TakeSavepoint(ctx context.Context, conn grpc.ClientConnInterface, req SavepointRequest) (SavepointResult, error) {
	in, err := structpb.NewStruct(map[string]any{"job_id": req.JobID, "dir": req.Dir, "stop": req.Stop})
	if err != nil {
		return SavepointResult{}, err
	}
	out := new(structpb.Struct)
	if err := conn.Invoke(ctx, savepointMethod, in, out); err != nil {
		return SavepointResult{}, err
	}
	f := out.GetFields()
	path := f["path"].GetStringValue()
	if path == "" {
		return SavepointResult{}, fmt.Errorf("savepoint of job %s: the service returned no path", req.JobID)
	}
	return SavepointResult{Path: path, Checkpoint: checkpoint.ID(f["checkpoint"].GetNumberValue())}, nil
}
