// Package metrics aggregates the MonitoringInfos that SDK workers report with
// each bundle into a job's metrics, as the job API's GetJobMetrics returns
// them and beamx.RunWithMetrics reads them.
//
// An SDK worker reports, with each ProcessBundleResponse, MonitoringInfos
// whose payloads hold that bundle's own totals. A job's value of a metric is
// therefore the combination over its bundles of the MonitoringInfos with the
// same identity: URN, type URN and labels. How payloads combine follows the
// type URN (see pipepb.MonitoringInfoTypeUrns_Enum):
//
//   - sum_int64, sum_double (user counters, element_count,
//     ptransform_execution_time and the other msec metrics): values add;
//   - distribution_int64, distribution_double (user distributions,
//     sampled_byte_size): counts and sums add, min and max are kept;
//     a distribution with a zero count is empty and changes nothing;
//   - latest_int64, latest_double (gauges): the value with the latest
//     timestamp is kept;
//   - set_string: the sets unite;
//   - any other type, including ones unknown to this package: the payload
//     reported last is kept.
//
// A MonitoringInfo without a type takes the one the model's
// MonitoringInfoSpecs give its URN. A MonitoringInfo whose payload cannot be
// decoded as its type requires is dropped and counted (Store.Skipped); it
// never stops the job.
//
// A Store keeps two such aggregations. The committed metrics combine the
// bundles that succeeded (Store.Commit); the attempted metrics combine those
// and the attempts that failed (Store.Attempt), so they differ once a bundle
// was retried. Store.Results encodes each aggregate back in its type's
// payload encoding, so that the SDKs' job clients decode them as they would
// the workers' own (for Go: metricsx.FromMonitoringInfos, which
// beamx.RunWithMetrics and the universal runner use).
package metrics
