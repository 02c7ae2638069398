package org.weir.runner;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.beam.model.jobmanagement.v1.JobApi;
import org.apache.beam.model.pipeline.v1.MetricsApi.MonitoringInfo;
import org.apache.beam.runners.core.metrics.MetricsContainerStepMap;
import org.apache.beam.sdk.metrics.MetricResults;

/**
 * Turns the job service's metric results (MonitoringInfos, as GetJobMetrics returns them) into
 * Beam Java's {@link MetricResults}, so {@code result.metrics().queryMetrics(...)} works on weir as
 * on any runner. Decoding the payloads is runners-core's ({@code MetricsContainerImpl.update}),
 * the same code Java runners use for what SDK harnesses report.
 */
final class WeirMetrics {
  private WeirMetrics() {}

  static MetricResults toResults(JobApi.MetricResults results) {
    return MetricsContainerStepMap.asMetricResults(
        byStep(results.getAttemptedList()), byStep(results.getCommittedList()));
  }

  /**
   * The metrics of each transform, in a container of its own; MonitoringInfos that name no
   * transform (PCollection sizes, the runner's own) are not user metrics and are left out.
   */
  private static MetricsContainerStepMap byStep(List<MonitoringInfo> infos) {
    Map<String, List<MonitoringInfo>> steps = new TreeMap<>();
    for (MonitoringInfo mi : infos) {
      String step = mi.getLabelsMap().get("PTRANSFORM");
      if (step == null || step.isEmpty()) {
        continue;
      }
      steps.computeIfAbsent(step, k -> new ArrayList<>()).add(mi);
    }
    MetricsContainerStepMap out = new MetricsContainerStepMap();
    for (Map.Entry<String, List<MonitoringInfo>> e : steps.entrySet()) {
      out.getContainer(e.getKey()).update(Collections.unmodifiableList(e.getValue()));
    }
    return out;
  }
}
