package org.weir.runner;

import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.PipelineRunner;
import org.apache.beam.sdk.metrics.MetricsEnvironment;
import org.apache.beam.sdk.options.PipelineOptions;
import org.joda.time.Duration;

/**
 * The runner Beam's tests use ({@code --runner=TestWeirRunner} in {@code
 * beamTestPipelineOptions}): {@link WeirRunner}, waiting for the job to end. A job that does not
 * finish DONE throws, with the job's error messages in the exception's message, so a test that
 * expects a DoFn's exception sees its text, and a failed PAssert fails the test.
 *
 * <p>A job still running after {@code weir.testTimeoutSeconds} (a system property, 600 by default)
 * is cancelled and the test fails, so one job that never ends does not hold up the suite.
 *
 * <p>It declares metrics supported, so TestPipeline also checks that every PAssert reported
 * success through the job's metrics: an assertion that never ran fails the test.
 */
public class TestWeirRunner extends PipelineRunner<PipelineResult> {
  static final String TIMEOUT_PROPERTY = "weir.testTimeoutSeconds";

  private final WeirRunner runner;

  private TestWeirRunner(WeirRunner runner) {
    this.runner = runner;
  }

  /** Called by Beam with the pipeline's options. */
  public static TestWeirRunner fromOptions(PipelineOptions options) {
    return new TestWeirRunner(WeirRunner.fromOptions(options));
  }

  @Override
  public PipelineResult run(Pipeline pipeline) {
    MetricsEnvironment.setMetricsSupported(true);
    WeirPipelineResult result = runner.run(pipeline);
    PipelineResult.State state = result.waitUntilFinish(timeout());
    if (state == null) {
      // A job that does not end would hold up every test after it.
      result.cancel();
      result.waitUntilFinish(Duration.standardSeconds(30));
      throw new RuntimeException(
          "weir: job "
              + result.jobId()
              + " did not end within "
              + timeout().getStandardSeconds()
              + "s ("
              + TIMEOUT_PROPERTY
              + "); cancelled");
    }
    if (state != PipelineResult.State.DONE) {
      throw new RuntimeException(
          "weir: job " + result.jobId() + " ended " + state + ": " + result.errors());
    }
    return result;
  }

  /** How long a test's job may run, from the system property weir.testTimeoutSeconds (600). */
  private static Duration timeout() {
    return Duration.standardSeconds(Long.getLong(TIMEOUT_PROPERTY, 600));
  }

  @Override
  public String toString() {
    return "TestWeirRunner";
  }
}
