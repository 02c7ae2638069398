package org.weir.runner;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.beam.model.jobmanagement.v1.JobApi;
import org.apache.beam.model.pipeline.v1.MetricsApi.MonitoringInfo;
import org.apache.beam.runners.core.metrics.MonitoringInfoEncodings;
import org.apache.beam.sdk.metrics.BoundedTrieResult;
import org.apache.beam.sdk.metrics.DistributionResult;
import org.apache.beam.sdk.metrics.GaugeResult;
import org.apache.beam.sdk.metrics.MetricFiltering;
import org.apache.beam.sdk.metrics.MetricKey;
import org.apache.beam.sdk.metrics.MetricName;
import org.apache.beam.sdk.metrics.MetricQueryResults;
import org.apache.beam.sdk.metrics.MetricResult;
import org.apache.beam.sdk.metrics.MetricResults;
import org.apache.beam.sdk.metrics.MetricsFilter;
import org.apache.beam.sdk.metrics.StringSetResult;

/**
 * Beam Java's {@link MetricResults} over the job service's metric results (the user metrics among
 * the MonitoringInfos GetJobMetrics returns), so {@code result.metrics().queryMetrics(...)} works on
 * weir as on any runner. A metric's step is its PTRANSFORM label (the transform's id in the
 * pipeline, which for Java is its unique name), its name the NAMESPACE and NAME labels. Payloads
 * are decoded by runners-core's {@link MonitoringInfoEncodings}, the code Java runners use for what
 * SDK harnesses report.
 */
final class WeirMetrics extends MetricResults {
  private static final String COUNTER = "beam:metric:user:sum_int64:v1";
  private static final String DISTRIBUTION = "beam:metric:user:distribution_int64:v1";
  private static final String GAUGE = "beam:metric:user:latest_int64:v1";
  private static final String STRING_SET = "beam:metric:user:set_string:v1";
  private static final String BOUNDED_TRIE = "beam:metric:user:bounded_trie:v1";

  private final Kind<Long> counters =
      new Kind<>(COUNTER, MonitoringInfoEncodings::decodeInt64Counter);
  private final Kind<DistributionResult> distributions =
      new Kind<>(
          DISTRIBUTION, p -> MonitoringInfoEncodings.decodeInt64Distribution(p).extractResult());
  private final Kind<GaugeResult> gauges =
      new Kind<>(GAUGE, p -> MonitoringInfoEncodings.decodeInt64Gauge(p).extractResult());
  private final Kind<StringSetResult> stringSets =
      new Kind<>(STRING_SET, p -> MonitoringInfoEncodings.decodeStringSet(p).extractResult());
  private final Kind<BoundedTrieResult> boundedTries =
      new Kind<>(BOUNDED_TRIE, p -> MonitoringInfoEncodings.decodeBoundedTrie(p).extractResult());

  private WeirMetrics() {}

  static MetricResults toResults(JobApi.MetricResults results) {
    WeirMetrics m = new WeirMetrics();
    m.add(results.getAttemptedList(), false);
    m.add(results.getCommittedList(), true);
    return m;
  }

  private void add(List<MonitoringInfo> infos, boolean committed) {
    for (MonitoringInfo mi : infos) {
      MetricKey key = key(mi);
      if (key == null) {
        continue;
      }
      counters.add(mi, key, committed);
      distributions.add(mi, key, committed);
      gauges.add(mi, key, committed);
      stringSets.add(mi, key, committed);
      boundedTries.add(mi, key, committed);
    }
  }

  /** The user metric's key, or null for a MonitoringInfo that is not a user metric of a step. */
  private static MetricKey key(MonitoringInfo mi) {
    Map<String, String> labels = mi.getLabelsMap();
    String step = labels.get("PTRANSFORM");
    String namespace = labels.get("NAMESPACE");
    String name = labels.get("NAME");
    if (!mi.getUrn().startsWith("beam:metric:user:") || step == null || namespace == null
        || name == null) {
      return null;
    }
    return MetricKey.create(step, MetricName.named(namespace, name));
  }

  @Override
  public MetricQueryResults queryMetrics(MetricsFilter filter) {
    return MetricQueryResults.create(
        counters.query(filter),
        distributions.query(filter),
        gauges.query(filter),
        stringSets.query(filter),
        boundedTries.query(filter),
        new ArrayList<>());
  }

  /** The metrics of one type: attempted and committed values by key. */
  private static final class Kind<T> {
    private final String urn;
    private final Function<org.apache.beam.vendor.grpc.v1p69p0.com.google.protobuf.ByteString, T>
        decode;
    private final Map<MetricKey, T> attempted = new LinkedHashMap<>();
    private final Map<MetricKey, T> committed = new LinkedHashMap<>();

    Kind(
        String urn,
        Function<org.apache.beam.vendor.grpc.v1p69p0.com.google.protobuf.ByteString, T> decode) {
      this.urn = urn;
      this.decode = decode;
    }

    void add(MonitoringInfo mi, MetricKey key, boolean isCommitted) {
      if (urn.equals(mi.getUrn())) {
        (isCommitted ? committed : attempted).put(key, decode.apply(mi.getPayload()));
      }
    }

    /**
     * The metrics the filter matches. A metric reported only as committed (Prism reports every
     * value so) was attempted too, by the bundles that committed it.
     */
    List<MetricResult<T>> query(MetricsFilter filter) {
      Set<MetricKey> keys = new LinkedHashSet<>(attempted.keySet());
      keys.addAll(committed.keySet());
      List<MetricResult<T>> out = new ArrayList<>();
      for (MetricKey key : keys) {
        if (MetricFiltering.matches(filter, key)) {
          T done = committed.get(key);
          out.add(MetricResult.create(key, done, attempted.getOrDefault(key, done)));
        }
      }
      return out;
    }
  }
}
