package runner

import "os"

// WEIR_TEST_STREAM_BUNDLE_OUTPUT=on (or off) stands for the server's
// default of --weir_stream_bundle_output in every test of the package, so
// the whole suite can run with bundles streaming their output.
func init() { testStreamDefault = os.Getenv("WEIR_TEST_STREAM_BUNDLE_OUTPUT") }
