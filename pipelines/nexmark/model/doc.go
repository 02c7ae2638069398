// Package model holds Nexmark's data: the three kinds of event of an
// online auction (a new person, a new auction, a bid), the Event that
// carries one of them, and the result types of the queries, as in Beam's
// Java suite (sdks/java/testing/nexmark, package model).
//
// Events have a binary encoding of their own (coder.go), registered with
// the Go SDK as their coder: deterministic, and faster than the schema
// coder the SDK would otherwise infer. The Kafka producer writes the same
// bytes, and the Kafka source decodes them with DecodeEvent, which returns
// an error, never panics, on bytes it did not make.
package model
