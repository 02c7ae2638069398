// Package kafkaio adds weir's native Kafka source and sink to a Beam Go
// pipeline.
//
// The transforms are runner-native: the pipeline carries weir's own URNs
// (ReadURN, WriteURN) with a JSON payload (ReadConfig, WriteConfig), and the
// runner reads and writes Kafka itself, with franz-go, partition by
// partition. No Java expansion service or Java worker is involved. Pipelines
// written against Beam's io/xlang/kafkaio package run unchanged when their
// expansion address points at `weir serve --expansion-port`, which expands
// Beam's kafkaio URNs into these same transforms.
//
// This package holds what a pipeline needs: the URNs, the configuration and
// the functions that add the transforms. The runner side lives in package
// kafka.
package kafkaio
