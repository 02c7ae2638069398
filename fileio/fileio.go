// Package fileio adds weir's native exactly-once file sink to a Beam Go
// pipeline.
//
// Like package kafkaio, the transform is runner-native: the pipeline
// carries weir's URN (WriteURN) with the JSON of WriteConfig as payload,
// and weir writes the files itself (package filesink), with two-phase
// commit: records go to a hidden temporary file per sink subtask and
// checkpoint epoch, which is renamed into place when the checkpoint that
// covers it completes (or, without checkpoints, when the input ends). A
// file is never visible half written, and a restored job neither loses nor
// repeats a file. Other runners refuse the URN.
package fileio

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
)

// WriteURN is the URN of weir's native file write; its payload is the JSON
// of WriteConfig.
const WriteURN = "beam:transform:weir:file_write:v1"

// WriteConfig configures a file write.
type WriteConfig struct {
	// Dir is the folder the files go to; created if missing. Required.
	Dir string `json:"dir"`
	// Prefix starts every file name; default "part".
	Prefix string `json:"prefix,omitempty"`
	// Suffix ends every file name (".txt"); default none.
	Suffix string `json:"suffix,omitempty"`
}

// Validate reports what is wrong with the configuration.
func (c *WriteConfig) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("no dir"))
	}
	if strings.ContainsAny(c.Prefix+c.Suffix, `/\`) {
		errs = append(errs, fmt.Errorf("prefix %q and suffix %q must not hold a path separator", c.Prefix, c.Suffix))
	}
	return errors.Join(errs...)
}

// FilePrefix returns the prefix of file names, with its default.
func (c *WriteConfig) FilePrefix() string {
	if c.Prefix == "" {
		return "part"
	}
	return c.Prefix
}

// DecodeWrite decodes and validates a WriteURN payload.
func DecodeWrite(payload []byte) (*WriteConfig, error) {
	var c WriteConfig
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("file write payload: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("file write: %w", err)
	}
	return &c, nil
}

// Write adds a native file write of col, a PCollection of []byte or
// string: each element becomes one line (its bytes and a newline, in no
// particular order across subtasks) of a file in cfg.Dir, whatever its
// window. Elements holding a newline make more than one line; use another
// sink for binary data. An invalid cfg or element type panics, as Beam's
// constructors do.
func Write(s beam.Scope, cfg WriteConfig, col beam.PCollection) {
	s = s.Scope("fileio.Write")
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("fileio.Write: %v", err))
	}
	if t := col.Type(); !typex.IsEqual(t, typex.New(reflectx.ByteSlice)) && !typex.IsEqual(t, typex.New(reflectx.String)) {
		panic(fmt.Sprintf("fileio.Write: writes []byte or string, not %v", t))
	}
	payload, err := json.Marshal(&cfg)
	if err != nil {
		panic(fmt.Sprintf("fileio.Write: %v", err))
	}
	beam.External(s, WriteURN, payload, []beam.PCollection{col}, nil, false)
}
