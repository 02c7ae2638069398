// Package expansion is weir's Beam expansion service. It expands Beam's own
// kafkaio cross-language URNs into weir's native Kafka transforms (package
// kafkaio), so a pipeline written against Beam's io/xlang/kafkaio (Go) or
// apache_beam.io.kafka (Python) runs on weir unchanged: only its expansion
// address changes, from a Java expansion service to `weir serve
// --expansion-port`. It also serves weir's PostgreSQL write (package pgio)
// to SDKs other than Go.
//
// # What is expanded
//
//	beam:transform:org.apache.beam:kafka_read_without_metadata:v1 -> kafkaio.ReadURN, output KV<bytes, bytes>
//	beam:transform:org.apache.beam:kafka_read_with_metadata:v1    -> kafkaio.ReadURN (WithMetadata), output Row (MetadataSchema)
//	beam:transform:org.apache.beam:kafka_write:v1                 -> kafkaio.WriteURN, input KV<bytes, bytes>, no output
//	beam:transform:weir:postgres_write:v1                         -> pgio.WriteURN, input schema rows, no output
//
// The PostgreSQL write (postgres.go) has no Beam URN to stand in for: other
// SDKs reach weir's own through this service, with the fields of
// pgio.WriteConfig in the payload.
//
// Any other URN is answered with ExpansionResponse.Error naming it.
//
// # One Expand call
//
//  1. The transform's payload is Beam's ExternalConfigurationPayload: a
//     schema and one row encoded with it. The row is decoded by weir's own
//     row decoder (row.go), which bounds what a request can make it
//     allocate, into fields keyed by name. Names are compared without case
//     and underscores, so Go's ConsumerConfig and Python's consumer_config
//     are the same field, as in Java's expansion service.
//  2. The fields are mapped onto kafkaio.ReadConfig or WriteConfig (read.go,
//     write.go). A field weir cannot honour, an unknown field or a missing
//     required one is an error that names the URN and the field; fields that
//     only tune Java's client (consumer_polling_timeout, redistribute...) are
//     accepted and ignored, because ignoring them changes no result.
//  3. The response (response.go) holds one primitive PTransform with weir's
//     URN and the configuration as JSON, wired to the request's input
//     PCollection (write) or to a new output PCollection (read) whose coder
//     and global windowing strategy are added to the components. The
//     transform has no environment: the runner executes it itself, and an
//     environment would make the SDK try to fetch its artifacts from this
//     service.
//
// Bad requests never panic or fail the RPC: the SDKs retry failed RPCs with
// back-off, while ExpansionResponse.Error is reported at once. Should the
// service itself panic, the request answers Internal and the server runs
// on (package contain).
package expansion
