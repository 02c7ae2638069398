package runner

import (
	"context"
	"fmt"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weir-runner/weir/jobview"
	"github.com/weir-runner/weir/webui"
)

// uiBackend is the web UI's view of a Server: the job service's own calls,
// so a button does what the CLI and the job API do.
type uiBackend struct{ s *Server }

var _ webui.Backend = uiBackend{}

func (b uiBackend) Jobs() []jobview.Summary {
	jobs := b.s.Jobs()
	out := make([]jobview.Summary, len(jobs))
	for i, j := range jobs {
		out[i] = j.Summary()
	}
	return out
}

func (b uiBackend) Job(id string) (jobview.Job, bool) {
	j := b.s.Job(JobID(id))
	if j == nil {
		return jobview.Job{}, false
	}
	return j.View(), true
}

func (b uiBackend) Cancel(ctx context.Context, id string) error {
	if err := b.running(id); err != nil {
		return err
	}
	_, err := b.s.Cancel(ctx, &jobpb.CancelJobRequest{JobId: id})
	return uiError(err)
}

func (b uiBackend) Drain(ctx context.Context, id string) error {
	if err := b.running(id); err != nil {
		return err
	}
	_, err := b.s.Drain(ctx, &jobpb.DrainJobRequest{JobId: id})
	return uiError(err)
}

func (b uiBackend) Savepoint(ctx context.Context, id string) (string, error) {
	if err := b.running(id); err != nil {
		return "", err
	}
	j := b.s.Job(JobID(id))
	res, err := j.TakeSavepoint(ctx, "", false)
	if err != nil {
		return "", fmt.Errorf("%w: savepoint of job %s: %v", webui.ErrConflict, id, err)
	}
	return res.Path, nil
}

// running refuses an action on a job that is not there or has ended.
func (b uiBackend) running(id string) error {
	j := b.s.Job(JobID(id))
	if j == nil {
		return fmt.Errorf("%w: %s", webui.ErrNotFound, id)
	}
	if st, _ := j.State(); IsTerminal(st) {
		return fmt.Errorf("%w: job %s is %s", webui.ErrConflict, id, st)
	}
	return nil
}

func uiError(err error) error {
	if err == nil {
		return nil
	}
	switch status.Code(err) {
	case codes.NotFound:
		return fmt.Errorf("%w: %v", webui.ErrNotFound, err)
	case codes.FailedPrecondition, codes.Unavailable, codes.Aborted:
		return fmt.Errorf("%w: %v", webui.ErrConflict, err)
	}
	return err
}
