package executor

import (
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/weir-runner/weir/timers"
)

// SetTimer sets a live timer of stateful stage s, as a bundle's response
// would: for tests outside the package (stable_restore_test.go).
func SetTimer(s *SDKStage, t timers.Timer) { s.timers.Set(t) }

// MainWatermark returns the main input watermark stage s has been handed.
func MainWatermark(s *SDKStage) mtime.Time { return s.mainWM }

// WEIR_TEST_STREAM_BUNDLE_OUTPUT=on runs every test of the package with
// SDK stages streaming their bundles' output (sdkstage_stream.go).
func init() { streamAll = os.Getenv("WEIR_TEST_STREAM_BUNDLE_OUTPUT") == "on" }
