package fnapi

import (
	"context"
	"fmt"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

// SplitRequest asks an in-flight bundle to hand back part of its remaining
// input.
type SplitRequest struct {
	// Instruction is the bundle's, as passed to BundleRequest.OnSent.
	Instruction string
	// TransformID is the data source transform whose input is split.
	TransformID string
	// Fraction is the fraction of the remaining work the bundle keeps.
	Fraction float64
	// EstimatedElements is how many elements the bundle's input holds.
	EstimatedElements int64
	// AllowedSplitPoints, when set, are the only element indices the SDK
	// may split at.
	AllowedSplitPoints []int64
}

// SplitError is a split the SDK answered with an error. The bundle goes on
// unsplit.
type SplitError struct {
	Instruction string
	Message     string
}

func (e *SplitError) Error() string {
	return fmt.Sprintf("fnapi: split of bundle %s refused: %s", e.Instruction, e.Message)
}

// Split sends a ProcessBundleSplitRequest for an in-flight bundle and
// returns the SDK's answer. An empty response means the SDK declined to
// split; a *SplitError means it failed to, which also leaves the bundle
// whole. Whatever the answer, the bundle's own response arrives as usual
// from Process; the residual of a split is the caller's to run.
//
// Every channel split of the answer names its transform: one that names
// none is given req.TransformID, the one channel the request asked about.
// Beam Java's harness leaves the name out (BeamFnDataReadRunner.trySplit,
// as of 2.73), and a channel split that no one recognizes is input the
// bundle gave up that nothing runs.
func (w *Worker) Split(ctx context.Context, req SplitRequest) (*fnpb.ProcessBundleSplitResponse, error) {
	respc, err := w.instruct(&fnpb.InstructionRequest{InstructionId: w.newInstructionID(),
		Request: &fnpb.InstructionRequest_ProcessBundleSplit{ProcessBundleSplit: &fnpb.ProcessBundleSplitRequest{
			InstructionId: req.Instruction,
			DesiredSplits: map[string]*fnpb.ProcessBundleSplitRequest_DesiredSplit{
				req.TransformID: {
					FractionOfRemainder:    req.Fraction,
					EstimatedInputElements: req.EstimatedElements,
					AllowedSplitPoints:     req.AllowedSplitPoints,
				},
			}}}})
	if err != nil {
		return nil, err
	}
	select {
	case resp := <-respc:
		if msg := resp.GetError(); msg != "" {
			return nil, &SplitError{Instruction: req.Instruction, Message: msg}
		}
		if s := resp.GetProcessBundleSplit(); s != nil {
			for _, cs := range s.GetChannelSplits() {
				if cs.GetTransformId() == "" {
					cs.TransformId = req.TransformID
				}
			}
			return s, nil
		}
		return &fnpb.ProcessBundleSplitResponse{}, nil
	case <-w.done:
		return nil, w.Err()
	case <-ctx.Done():
		// The response, if it comes, finds no one waiting: forget it.
		return nil, ctx.Err()
	}
}
