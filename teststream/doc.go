// Package teststream is the connector of Beam's TestStream
// (beam:transform:teststream:v1): weir replays its events itself, as a
// source (executor.TestStream).
//
// Decode checks the payload at submission and re-encodes every element
// into the wire encoding of the output (coders the runner cannot measure
// length-prefixed), in the context its SDK wrote it (wire.go), so the
// source only replays bytes. A TestStream drives the job's processing
// time: its stage runs as one subtask and the job one subtask per stage
// (Placement.Serial), so that its elements reach a trigger in order with
// its processing-time advances.
package teststream
