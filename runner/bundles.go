package runner

import (
	"time"

	"github.com/weir-runner/weir/joboptions"
)

// The bundle-size options (MaxBundleElementsOption, MaxBundleBytesOption,
// MaxBundleTimeOption), as Beam's Flink runner's --maxBundleSize and
// --maxBundleTimeMills. A bundle of an SDK stage closes when its input
// reaches either bound, when the watermark moves, at a barrier, or the
// bundle time after its first element arrived. Smaller bundles cost the
// SDK more per element and keep less input waiting in a worker; larger
// ones wait longer at an aligned barrier when a DoFn is slow
// (docs/decisions.md, "bundle sizes").

// bundleLimits are a job's bundle options; zero leaves the executor's
// default. stream says bundles stream their output.
type bundleLimits struct {
	elems, bytes int
	time         time.Duration
	stream       bool
}

func bundleOptions(j *Job) (bundleLimits, error) {
	opts, err := j.JobOptions()
	if err != nil {
		return bundleLimits{}, err
	}
	server := j.streamDefault
	if server == "" {
		server = testStreamDefault
	}
	return bundleLimits{elems: opts.MaxBundleElements, bytes: opts.MaxBundleBytes, time: opts.MaxBundleTime,
		stream: streamsOutput(opts, server)}, nil
}

// streamsOutput resolves --weir_stream_bundle_output: the job's on or off,
// else the server's (LocalExecutor.StreamBundleOutput), else auto, which
// streams in jobs that take checkpoints. Those restart from one when a
// bundle is lost after its output left (restart.go); the rest keep
// retrying lost bundles alone (docs/decisions.md, "streamed bundle
// output").
func streamsOutput(opts *joboptions.Options, server string) bool {
	mode := opts.StreamBundleOutput
	if mode == "" || mode == joboptions.StreamAuto {
		mode = server
	}
	switch mode {
	case joboptions.StreamOn:
		return true
	case joboptions.StreamOff:
		return false
	}
	return opts.CheckpointInterval > 0
}

// testStreamDefault stands for the server's default in the package's
// tests: WEIR_TEST_STREAM_BUNDLE_OUTPUT=on runs them all streamed.
var testStreamDefault string
