package fnapi_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"

	"github.com/weir-runner/weir/fnapi"
	"github.com/weir-runner/weir/fnapi/fnapitest"
)

// TestSplitInFlightBundle splits a running bundle within its one element:
// the primary's output and the residual together are the whole restriction.
func TestSplitInFlightBundle(t *testing.T) {
	_, w := startFake(t, &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, Restrictions: true, Pace: time.Millisecond})
	sent := make(chan string, 1)
	type result struct {
		res *fnapi.BundleResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
			Inputs:  []fnapi.Input{{TransformID: "src", Elements: [][]byte{fnapitest.Restriction(0, 200)}}},
			Outputs: []string{"sink"}, OnSent: func(id string) { sent <- id }})
		done <- result{res, err}
	}()
	inst := <-sent
	time.Sleep(20 * time.Millisecond)
	sr, err := w.Split(ctx(t), fnapi.SplitRequest{Instruction: inst, TransformID: "src", Fraction: 0.5, EstimatedElements: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.GetResidualRoots()) != 1 || len(sr.GetPrimaryRoots()) != 1 || len(sr.GetChannelSplits()) != 1 {
		t.Fatalf("split response %v, want one primary root, one residual root and a channel split", sr)
	}
	if cs := sr.GetChannelSplits()[0]; cs.GetTransformId() != "src" || cs.GetLastPrimaryElement() != -1 || cs.GetFirstResidualElement() != 1 {
		t.Errorf("channel split %v, want -1/1 on src", cs)
	}
	resid := sr.GetResidualRoots()[0].GetApplication().GetElement()
	start, end := binary.BigEndian.Uint32(resid), binary.BigEndian.Uint32(resid[4:])
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	out := r.res.Outputs["sink"].Bytes()
	n := uint32(0)
	for len(out) > 0 { // 13 bytes of header, 4 of value
		if p := fnapitest.Position(out[:17]); p != n {
			t.Fatalf("primary output %d is position %d", n, p)
		}
		out, n = out[17:], n+1
	}
	if n != start || end != 200 {
		t.Errorf("primary emitted [0, %d), residual is [%d, %d): want them to meet and end at 200", n, start, end)
	}
}

// TestSplitRefusedOrFailed: a declined split is an empty response, and a
// split of a bundle the SDK does not know is a SplitError.
func TestSplitRefusedOrFailed(t *testing.T) {
	// Paced over a long restriction, the bundle is still running when the
	// split arrives, however slow the machine.
	_, w := startFake(t, &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, Restrictions: true, RefuseSplits: true,
		Pace: time.Millisecond})
	sr, err := w.Split(ctx(t), fnapi.SplitRequest{Instruction: "nope", TransformID: "src", Fraction: 0.5})
	var se *fnapi.SplitError
	if !errors.As(err, &se) || se.Instruction != "nope" {
		t.Fatalf("Split of an unknown bundle = %v, %v; want a SplitError", sr, err)
	}
	sent := make(chan string, 1)
	go func() {
		_, _ = w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
			Inputs:  []fnapi.Input{{TransformID: "src", Elements: [][]byte{fnapitest.Restriction(0, 1<<30)}}},
			Outputs: []string{"sink"}, OnSent: func(id string) { sent <- id }})
	}()
	sr, err = w.Split(ctx(t), fnapi.SplitRequest{Instruction: <-sent, TransformID: "src", Fraction: 0.5})
	if err != nil || len(sr.GetResidualRoots()) != 0 || len(sr.GetChannelSplits()) != 0 {
		t.Fatalf("declined split = %v, %v; want an empty response", sr, err)
	}
}

// TestSplitNamesUnnamedChannel: a channel split that names no transform,
// as Beam Java's harness answers, comes back naming the one the request
// asked about, so the caller sees the input the bundle gave up.
func TestSplitNamesUnnamedChannel(t *testing.T) {
	_, w := startFake(t, &fnapitest.Worker{Echo: map[string]string{"src": "sink"}, Restrictions: true,
		UnnamedChannelSplits: true, Pace: time.Millisecond})
	sent := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := w.Process(ctx(t), fnapi.BundleRequest{DescriptorID: "d",
			Inputs: []fnapi.Input{{TransformID: "src", Elements: [][]byte{
				fnapitest.Restriction(0, 1), fnapitest.Restriction(1, 2), fnapitest.Restriction(2, 400)}}},
			Outputs: []string{"sink"}, OnSent: func(id string) { sent <- id }})
		done <- err
	}()
	inst := <-sent
	// Asked before the worker has the data, the split is declined: ask
	// until it is not, which the last element's 400 ms leave time for.
	var sr *fnpb.ProcessBundleSplitResponse
	for range 100 {
		var err error
		sr, err = w.Split(ctx(t), fnapi.SplitRequest{Instruction: inst, TransformID: "src", Fraction: 0.5, EstimatedElements: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(sr.GetChannelSplits()) > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(sr.GetChannelSplits()) != 1 {
		t.Fatalf("split response %v, want one channel split", sr)
	}
	if cs := sr.GetChannelSplits()[0]; cs.GetTransformId() != "src" {
		t.Errorf("channel split %v names %q, want src", cs, cs.GetTransformId())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
