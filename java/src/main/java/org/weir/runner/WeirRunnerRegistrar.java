package org.weir.runner;

import java.util.Arrays;
import java.util.Collections;
import org.apache.beam.sdk.PipelineRunner;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.options.PipelineOptionsRegistrar;
import org.apache.beam.sdk.runners.PipelineRunnerRegistrar;

/**
 * Registers {@code --runner=WeirRunner} and weir's job options ({@link WeirPipelineOptions}), so
 * that {@code --weirCheckpointInterval=10s} parses on any pipeline with this jar on its classpath.
 * Listed in META-INF/services.
 */
public final class WeirRunnerRegistrar {
  private WeirRunnerRegistrar() {}

  /** The runner, and the one Beam's tests use (TestWeirRunner). */
  public static final class Runner implements PipelineRunnerRegistrar {
    @Override
    public Iterable<Class<? extends PipelineRunner<?>>> getPipelineRunners() {
      return Arrays.asList(WeirRunner.class, TestWeirRunner.class);
    }
  }

  /** The options. */
  public static final class Options implements PipelineOptionsRegistrar {
    @Override
    public Iterable<Class<? extends PipelineOptions>> getPipelineOptions() {
      return Collections.singletonList(WeirPipelineOptions.class);
    }
  }
}
