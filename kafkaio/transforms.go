package kafkaio

import (
	"encoding/json"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
)

// kvBytes is the type of the records a read produces and a write takes.
var kvBytes = typex.NewKV(typex.New(reflectx.ByteSlice), typex.New(reflectx.ByteSlice))

// Read adds a native Kafka read: a PCollection of KV<[]byte, []byte>
// (record key, record value) in the global window at each record's event
// time. It is bounded when cfg sets MaxRecords or MaxReadTimeMillis.
//
// The transform is a primitive with ReadURN and cfg as its JSON payload,
// added with beam.External: weir runs it itself, so no expansion service
// is involved. Other runners refuse it. An invalid cfg panics, as Beam's
// constructors do, naming what is wrong.
func Read(s beam.Scope, cfg ReadConfig) beam.PCollection {
	s = s.Scope("kafkaio.Read")
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("kafkaio.Read: %v", err))
	}
	payload, err := json.Marshal(&cfg)
	if err != nil {
		panic(fmt.Sprintf("kafkaio.Read: %v", err))
	}
	return beam.External(s, ReadURN, payload, nil, []beam.FullType{kvBytes}, cfg.Bounded())[0]
}

// Write adds a native Kafka write of col, a PCollection of
// KV<[]byte, []byte>: each element becomes a record with that key and
// value in cfg's topic, whatever its window. Writes are at least once
// unless cfg.Semantic is ExactlyOnce, which needs a job with checkpoints
// (see docs/kafka.md).
func Write(s beam.Scope, cfg WriteConfig, col beam.PCollection) {
	s = s.Scope("kafkaio.Write")
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("kafkaio.Write: %v", err))
	}
	if t := col.Type(); !typex.IsEqual(t, kvBytes) {
		panic(fmt.Sprintf("kafkaio.Write: writes KV<[]byte, []byte>, not %v", t))
	}
	payload, err := json.Marshal(&cfg)
	if err != nil {
		panic(fmt.Sprintf("kafkaio.Write: %v", err))
	}
	beam.External(s, WriteURN, payload, []beam.PCollection{col}, nil, false)
}
