package runner

import "time"

// The bundle-size options (MaxBundleElementsOption, MaxBundleBytesOption,
// MaxBundleTimeOption), as Beam's Flink runner's --maxBundleSize and
// --maxBundleTimeMills. A bundle of an SDK stage closes when its input
// reaches either bound, when the watermark moves, at a barrier, or the
// bundle time after its first element arrived. Smaller bundles cost the
// SDK more per element and keep less input waiting in a worker; larger
// ones wait longer at an aligned barrier when a DoFn is slow
// (docs/decisions.md, "bundle sizes").

// bundleLimits are a job's bundle options; zero leaves the executor's
// default.
type bundleLimits struct {
	elems, bytes int
	time         time.Duration
}

func bundleOptions(j *Job) (bundleLimits, error) {
	opts, err := j.JobOptions()
	if err != nil {
		return bundleLimits{}, err
	}
	return bundleLimits{elems: opts.MaxBundleElements, bytes: opts.MaxBundleBytes, time: opts.MaxBundleTime}, nil
}
