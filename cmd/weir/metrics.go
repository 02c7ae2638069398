package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/weir-runner/weir/metrics"
)

// listMetrics prints a job's metrics (GetJobMetrics) as a table: the user
// metrics of its DoFns and weir's own (namespace weir and below), with
// --all the SDKs' system metrics too (element counts, timings), each with
// its committed value (of the bundles that succeeded) and its attempted
// one (with the bundles retried).
func listMetrics(args []string, stdout io.Writer) error {
	var all bool
	flags := func(fs *flag.FlagSet) {
		fs.BoolVar(&all, "all", false, "also show the system metrics the SDKs report (element counts, timings, sizes)")
	}
	return onJobWith("metrics", args, flags, func(ctx context.Context, client jobpb.JobServiceClient, id, endpoint string) error {
		resp, err := client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: id})
		if err != nil {
			return fmt.Errorf("metrics of job %s on %s: %w", id, endpoint, err)
		}
		return printMetrics(stdout, resp.GetMetrics(), all)
	})
}

// metricRow is one metric of the table, both of its values.
type metricRow struct {
	namespace, name, transform, kind string
	committed, attempted             string
}

const userURNPrefix = "beam:metric:user:"

func printMetrics(w io.Writer, res *jobpb.MetricResults, all bool) error {
	rows := map[string]*metricRow{}
	add := func(infos []*pipepb.MonitoringInfo, committed bool) {
		for _, mi := range infos {
			user := strings.HasPrefix(mi.GetUrn(), userURNPrefix)
			if !user && !all {
				continue
			}
			key := metricKey(mi)
			r := rows[key]
			if r == nil {
				r = &metricRow{committed: "-", attempted: "-"}
				r.namespace, r.name, r.transform = metricLabels(mi, user)
				rows[key] = r
			}
			kind, v, err := metrics.Describe(mi)
			if err != nil {
				v = "(" + err.Error() + ")"
			}
			r.kind = kind
			if committed {
				r.committed = v
			} else {
				r.attempted = v
			}
		}
	}
	add(res.GetCommitted(), true)
	add(res.GetAttempted(), false)
	sorted := slices.SortedFunc(maps.Values(rows), func(a, b *metricRow) int {
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name),
			cmp.Compare(a.transform, b.transform), cmp.Compare(a.kind, b.kind))
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tTRANSFORM\tKIND\tCOMMITTED\tATTEMPTED")
	for _, r := range sorted {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.namespace, r.name, cmp.Or(r.transform, "-"), r.kind, r.committed, r.attempted)
	}
	return tw.Flush()
}

// metricLabels names a metric: a user metric by its namespace and name; a
// system metric as namespace beam and its URN, shortened, as name. Its
// transform is its PTRANSFORM, or for a PCollection's metric the
// PCollection.
func metricLabels(mi *pipepb.MonitoringInfo, user bool) (namespace, name, transform string) {
	l := mi.GetLabels()
	transform = cmp.Or(l["PTRANSFORM"], l["PCOLLECTION"])
	if user {
		return l["NAMESPACE"], l["NAME"], transform
	}
	name = strings.TrimSuffix(strings.TrimPrefix(mi.GetUrn(), "beam:metric:"), ":v1")
	return "beam", name, transform
}

// metricKey is a metric's identity (URN, type, labels), which a committed
// and an attempted value share.
func metricKey(mi *pipepb.MonitoringInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q", mi.GetUrn(), mi.GetType())
	for _, k := range slices.Sorted(maps.Keys(mi.GetLabels())) {
		fmt.Fprintf(&b, " %q=%q", k, mi.GetLabels()[k])
	}
	return b.String()
}
