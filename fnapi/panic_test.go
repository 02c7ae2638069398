package fnapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/fnapi/fnapitest"
)

// panickingState is a bundle's state handler with a bug.
type panickingState struct{}

func (panickingState) HandleState(*fnpb.StateRequest) (*fnpb.StateResponse, error) {
	var m map[string]int
	m["state boom"]++ // a nil map write: a runtime panic
	return nil, nil
}

func logPanics(string, *fnpb.LogEntry) { panic("log boom") }

// TestHandlerPanicFailsItsWorkersBundles: the runner's code behind an Fn
// API handler panics while answering a worker's message (a state request,
// a log entry). The worker is lost with the panic and its stack as the
// reason, which fails its bundle and is not the ErrWorkerLost the
// executor would retry; a worker of another job's server in the same
// process processes its bundle as before.
func TestHandlerPanicFailsItsWorkersBundles(t *testing.T) {
	for _, tc := range []struct {
		name, method, value, frame string
		opts                       fnapi.Options
		state                      fnapi.StateHandler
	}{
		{"state", "BeamFnState/State", "assignment to entry in nil map", "panickingState.HandleState",
			fnapi.Options{JobID: "bad"}, panickingState{}},
		{"logging", "BeamFnLogging/Logging", "log boom", "fnapi_test.logPanics",
			fnapi.Options{JobID: "bad", OnLog: logPanics}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := fnapi.NewServer(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			w := srv.ExpectWorker("w-bad", "env")
			stateErr := make(chan error, 1)
			fake := &fnapitest.Worker{Echo: map[string]string{"src": "sink"},
				Stateful: func(in fnapitest.BundleIn) fnapitest.BundleOut {
					// As an SDK does in the middle of a bundle.
					stateErr <- askState(srv.Endpoint(), "w-bad", in.Instruction)
					return fnapitest.BundleOut{}
				}}
			if err := fake.Start(srv.Endpoint(), "w-bad"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(fake.Stop)

			_, good := startFake(t, &fnapitest.Worker{Echo: map[string]string{"src": "sink"}})

			_, err = w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d", State: tc.state,
				Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{{1}}}}, Outputs: []string{"sink"}})
			if tc.name == "logging" {
				// The log entry was sent when the worker started; the
				// bundle may have run before it was read.
				<-w.Done()
				err = w.Err()
			}
			if err == nil {
				t.Fatal("the bundle succeeded")
			}
			if errors.Is(err, fnapi.ErrWorkerLost) {
				t.Errorf("error is ErrWorkerLost, which the executor retries: %v", err)
			}
			for _, want := range []string{"w-bad", tc.method, "panic: " + tc.value, tc.frame} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if tc.name == "state" {
				if err := <-stateErr; status.Code(err) != codes.Internal {
					t.Errorf("the state request got %v, want Internal", err)
				}
			}

			res, err := good.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
				Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{{7}}}}, Outputs: []string{"sink"}})
			if err != nil || string(res.Outputs["sink"].Bytes()) != "\x07" {
				t.Errorf("the other job's worker: %v, %v", res, err)
			}
		})
	}
}

// askState sends one state request for instruction on a state stream of
// its own, as worker id, and returns how the stream answered.
func askState(endpoint, id, instruction string) error {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "worker_id", id)
	st, err := fnpb.NewBeamFnStateClient(conn).State(ctx)
	if err != nil {
		return err
	}
	if err := st.Send(&fnpb.StateRequest{Id: "s1", InstructionId: instruction,
		StateKey: &fnpb.StateKey{Type: &fnpb.StateKey_Runner_{Runner: &fnpb.StateKey_Runner{Key: []byte("k")}}},
		Request:  &fnpb.StateRequest_Get{Get: &fnpb.StateGetRequest{}}}); err != nil {
		return err
	}
	_, err = st.Recv()
	return err
}
