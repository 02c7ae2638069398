package runner

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/weir-runner/weir/jobview"
)

// Beam's JobInfo (GetJobs) has no start time, end time or error, which a
// job list needs; weir serves them beside it, as it serves savepoints
// (savepoint_service.go): weir.v1.Jobs/List, whose messages are protobuf
// Structs. The request is empty; the response's "jobs" is a list of
// jobview.Summary as objects with the fields id, name, state, start and
// end (RFC 3339 with nanoseconds; no end while the job runs), seconds and
// error. GetJobs stays Beam's, for every SDK and tool that reads it.
const listJobsMethod = "/weir.v1.Jobs/List"

// jobsServer is the handler type of the weir.v1.Jobs service.
type jobsServer interface {
	listJobs(ctx context.Context, req *structpb.Struct) (*structpb.Struct, error)
}

var jobsDesc = grpc.ServiceDesc{
	ServiceName: "weir.v1.Jobs",
	HandlerType: (*jobsServer)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "List", Handler: listJobsHandler}},
	Metadata:    "weir/runner/jobs_service.go",
}

func listJobsHandler(srv any, ctx context.Context, dec func(any) error, intercept grpc.UnaryServerInterceptor) (any, error) {
	in := new(structpb.Struct)
	if err := dec(in); err != nil {
		return nil, err
	}
	s := srv.(jobsServer)
	if intercept == nil {
		return s.listJobs(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: listJobsMethod}
	return intercept(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		return s.listJobs(ctx, req.(*structpb.Struct))
	})
}

// listJobs serves List: every job the registry keeps, oldest first, as
// Job.Summary gives it.
func (s *Server) listJobs(ctx context.Context, _ *structpb.Struct) (*structpb.Struct, error) {
	var jobs []any
	for _, j := range s.Jobs() {
		jobs = append(jobs, encodeSummary(j.Summary()))
	}
	return structpb.NewStruct(map[string]any{"jobs": jobs})
}

func encodeSummary(sum jobview.Summary) map[string]any {
	m := map[string]any{"id": sum.ID, "name": sum.Name, "state": sum.State,
		"start": sum.Start.Format(time.RFC3339Nano), "seconds": sum.Seconds}
	if !sum.End.IsZero() {
		m["end"] = sum.End.Format(time.RFC3339Nano)
	}
	if sum.Error != "" {
		m["error"] = sum.Error
	}
	return m
}

func decodeSummary(v *structpb.Value) (jobview.Summary, error) {
	f := v.GetStructValue().GetFields()
	sum := jobview.Summary{ID: f["id"].GetStringValue(), Name: f["name"].GetStringValue(), State: f["state"].GetStringValue(),
		Seconds: f["seconds"].GetNumberValue(), Error: f["error"].GetStringValue()}
	if sum.ID == "" {
		return sum, fmt.Errorf("a job without an id")
	}
	var err error
	if sum.Start, err = time.Parse(time.RFC3339Nano, f["start"].GetStringValue()); err != nil {
		return sum, fmt.Errorf("job %s: start: %w", sum.ID, err)
	}
	if e := f["end"].GetStringValue(); e != "" {
		if sum.End, err = time.Parse(time.RFC3339Nano, e); err != nil {
			return sum, fmt.Errorf("job %s: end: %w", sum.ID, err)
		}
	}
	return sum, nil
}

// ListJobs calls weir.v1.Jobs/List on a weir job service: every job it
// keeps, oldest first. A job service that is not weir's answers
// Unimplemented.
func ListJobs(ctx context.Context, conn grpc.ClientConnInterface) ([]jobview.Summary, error) {
	out := new(structpb.Struct)
	if err := conn.Invoke(ctx, listJobsMethod, &structpb.Struct{}, out); err != nil {
		return nil, err
	}
	var sums []jobview.Summary
	for _, v := range out.GetFields()["jobs"].GetListValue().GetValues() {
		sum, err := decodeSummary(v)
		if err != nil {
			return nil, fmt.Errorf("weir.v1.Jobs/List: %w", err)
		}
		sums = append(sums, sum)
	}
	return sums, nil
}
