// Package fnapitest provides a fake SDK worker that speaks the Fn API, so
// the runner's side of the protocol is tested without an SDK.
package fnapitest

import (
	"context"
	"fmt"
	"sync"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// Worker is a fake SDK worker. For each ProcessBundle it copies the data of
// every source transform to the sink transforms named in Echo, then answers.
type Worker struct {
	// Echo maps a source transform to the sink transform its data goes to.
	Echo map[string]string
	// CrashOnBundle, when set, makes the worker drop its connections on
	// receiving a ProcessBundle request instead of answering it.
	CrashOnBundle bool
	// Fail, when set, makes every bundle fail with this message.
	Fail string

	conn   *grpc.ClientConn
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start connects the worker to endpoint as id.
func (w *Worker) Start(endpoint, id string) error {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	w.conn = conn
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), "worker_id", id))
	w.cancel = cancel
	logs, err := fnpb.NewBeamFnLoggingClient(conn).Logging(ctx)
	if err != nil {
		return err
	}
	_ = logs.Send(&fnpb.LogEntry_List{LogEntries: []*fnpb.LogEntry{{
		Severity: fnpb.LogEntry_Severity_INFO, Message: "fake worker " + id + " started"}}})
	ctl, err := fnpb.NewBeamFnControlClient(conn).Control(ctx)
	if err != nil {
		return err
	}
	data, err := fnpb.NewBeamFnDataClient(conn).Data(ctx)
	if err != nil {
		return err
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.serve(ctl, data)
	}()
	return nil
}

// Stop disconnects the worker.
func (w *Worker) Stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
	if w.conn != nil {
		w.conn.Close()
	}
}

type bundleIn struct {
	data map[string][]byte
	last map[string]bool
	done chan struct{}
}

func (w *Worker) serve(ctl fnpb.BeamFnControl_ControlClient, data fnpb.BeamFnData_DataClient) {
	var mu sync.Mutex
	bundles := map[string]*bundleIn{}
	get := func(id string) *bundleIn {
		mu.Lock()
		defer mu.Unlock()
		b, ok := bundles[id]
		if !ok {
			b = &bundleIn{data: map[string][]byte{}, last: map[string]bool{}, done: make(chan struct{})}
			bundles[id] = b
		}
		return b
	}
	go func() {
		for {
			msg, err := data.Recv()
			if err != nil {
				return
			}
			for _, d := range msg.GetData() {
				b := get(d.GetInstructionId())
				mu.Lock()
				b.data[d.GetTransformId()] = append(b.data[d.GetTransformId()], d.GetData()...)
				if d.GetIsLast() {
					b.last[d.GetTransformId()] = true
					if len(b.last) == len(w.Echo) {
						close(b.done)
					}
				}
				mu.Unlock()
			}
		}
	}()
	for {
		req, err := ctl.Recv()
		if err != nil {
			return
		}
		if req.GetProcessBundle() == nil {
			_ = ctl.Send(&fnpb.InstructionResponse{InstructionId: req.GetInstructionId()})
			continue
		}
		if w.CrashOnBundle {
			w.cancel()
			return
		}
		b := get(req.GetInstructionId())
		<-b.done
		resp := &fnpb.InstructionResponse{InstructionId: req.GetInstructionId(),
			Response: &fnpb.InstructionResponse_ProcessBundle{ProcessBundle: &fnpb.ProcessBundleResponse{}}}
		if w.Fail != "" {
			resp.Error = fmt.Sprintf("%s (bundle %s)", w.Fail, req.GetInstructionId())
			_ = ctl.Send(resp)
			continue
		}
		var out []*fnpb.Elements_Data
		for src, sink := range w.Echo {
			out = append(out, &fnpb.Elements_Data{InstructionId: req.GetInstructionId(),
				TransformId: sink, Data: b.data[src], IsLast: true})
		}
		if err := data.Send(&fnpb.Elements{Data: out}); err != nil {
			return
		}
		if err := ctl.Send(resp); err != nil {
			return
		}
	}
}
