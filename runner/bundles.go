package runner

import (
	"flag"
	"fmt"
	"strconv"
	"time"
)

// Bundle-size options, as Beam's Flink runner's --maxBundleSize and
// --maxBundleTimeMills. A bundle of an SDK stage closes when its input
// reaches either bound, when the watermark moves, at a barrier, or the
// bundle time after its first element arrived. Smaller bundles cost the
// SDK more per element and keep less input waiting in a worker; larger
// ones wait longer at an aligned barrier when a DoFn is slow
// (docs/decisions.md, "bundle sizes").
const (
	MaxBundleElementsOption = "weir_max_bundle_elements"
	MaxBundleBytesOption    = "weir_max_bundle_bytes"
	MaxBundleTimeOption     = "weir_max_bundle_time"
)

var (
	_ = flag.Int(MaxBundleElementsOption, 0, "weir: elements of input that close a bundle (default 65536)")
	_ = flag.Int(MaxBundleBytesOption, 0, "weir: bytes of input that close a bundle (default 16 MiB)")
	_ = flag.Duration(MaxBundleTimeOption, 0, "weir: how long after its first element a bundle closes if nothing else closed it (default 1s)")
)

// bundleLimits are a job's bundle options; zero leaves the executor's
// default.
type bundleLimits struct {
	elems, bytes int
	time         time.Duration
}

func bundleOptions(j *Job) (bundleLimits, error) {
	var l bundleLimits
	for _, o := range []struct {
		name string
		dst  *int
	}{{MaxBundleElementsOption, &l.elems}, {MaxBundleBytesOption, &l.bytes}} {
		v := pipelineOption(j.Options, o.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return l, fmt.Errorf("option --%s=%q: want a positive whole number", o.name, v)
		}
		*o.dst = n
	}
	return l, positiveDuration(MaxBundleTimeOption, pipelineOption(j.Options, MaxBundleTimeOption), &l.time)
}
