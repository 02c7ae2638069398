package org.weir.runner;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.beam.fn.harness.ExternalWorkerService;
import org.apache.beam.model.jobmanagement.v1.ArtifactStagingServiceGrpc;
import org.apache.beam.model.jobmanagement.v1.JobApi.PrepareJobRequest;
import org.apache.beam.model.jobmanagement.v1.JobApi.PrepareJobResponse;
import org.apache.beam.model.jobmanagement.v1.JobApi.RunJobRequest;
import org.apache.beam.model.jobmanagement.v1.JobServiceGrpc;
import org.apache.beam.model.pipeline.v1.Endpoints.ApiServiceDescriptor;
import org.apache.beam.model.pipeline.v1.RunnerApi;
import org.apache.beam.runners.fnexecution.artifact.ArtifactRetrievalService;
import org.apache.beam.runners.fnexecution.artifact.ArtifactStagingService;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineRunner;
import org.apache.beam.sdk.fn.channel.ManagedChannelFactory;
import org.apache.beam.sdk.fn.server.GrpcFnServer;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.options.PipelineOptionsValidator;
import org.apache.beam.sdk.options.PortablePipelineOptions;
import org.apache.beam.sdk.util.construction.DefaultArtifactResolver;
import org.apache.beam.sdk.util.construction.Environments;
import org.apache.beam.sdk.util.construction.PipelineOptionsTranslation;
import org.apache.beam.sdk.util.construction.PipelineTranslation;
import org.apache.beam.sdk.util.construction.SdkComponents;
import org.apache.beam.sdk.util.construction.resources.PipelineResources;
import org.apache.beam.vendor.grpc.v1p69p0.io.grpc.ManagedChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a pipeline on a weir job server ({@code weir serve}) through Beam's job API, as Beam's
 * PortableRunner does: {@code --runner=WeirRunner --jobEndpoint=localhost:8099
 * --defaultEnvironmentType=LOOPBACK} (or EXTERNAL with {@code --defaultEnvironmentConfig} naming
 * a worker pool). It prepares the job, stages the classpath over the reverse artifact protocol,
 * runs it and returns a {@link WeirPipelineResult}.
 *
 * <p>It exists because Beam's PortableRunner (beam-runners-portability-java) is not served by the
 * package registry this project builds from; with that jar on the classpath, {@code
 * --runner=PortableRunner} sends the same requests.
 */
public class WeirRunner extends PipelineRunner<WeirPipelineResult> {
  private static final Logger LOG = LoggerFactory.getLogger(WeirRunner.class);

  private final PipelineOptions options;

  private WeirRunner(PipelineOptions options) {
    this.options = options;
  }

  /** Called by Beam with the pipeline's options ({@code --runner=WeirRunner}). */
  public static WeirRunner fromOptions(PipelineOptions options) {
    PipelineOptionsValidator.validate(PortablePipelineOptions.class, options);
    return new WeirRunner(options);
  }

  @Override
  public WeirPipelineResult run(Pipeline pipeline) {
    PortablePipelineOptions portable = options.as(PortablePipelineOptions.class);
    String endpoint = portable.getJobEndpoint();
    if (endpoint == null || endpoint.isEmpty()) {
      throw new IllegalArgumentException("weir: --jobEndpoint is required, e.g. localhost:8099");
    }
    AutoCloseable loopback = null;
    if (Environments.ENVIRONMENT_LOOPBACK.equals(portable.getDefaultEnvironmentType())) {
      // The SDK worker runs in this process; weir starts it through this
      // pool as it would an EXTERNAL one.
      try {
        GrpcFnServer<ExternalWorkerService> pool = new ExternalWorkerService(options).start();
        portable.setDefaultEnvironmentConfig(pool.getApiServiceDescriptor().getUrl());
        loopback = pool;
      } catch (Exception e) {
        throw new RuntimeException("weir: starting the LOOPBACK worker service", e);
      }
    }
    if (portable.getFilesToStage() == null) {
      List<String> files =
          PipelineResources.detectClassPathResourcesToStage(
              Environments.class.getClassLoader(), options);
      if (files.isEmpty()) {
        throw new IllegalArgumentException("weir: no classpath elements found to stage");
      }
      portable.setFilesToStage(new ArrayList<>(files));
    }

    RunnerApi.Pipeline proto =
        PipelineTranslation.toProto(pipeline, SdkComponents.create(options));
    proto = DefaultArtifactResolver.INSTANCE.resolveArtifacts(proto);

    ManagedChannelFactory channels = ManagedChannelFactory.createDefault();
    ManagedChannel jobChannel =
        channels.forDescriptor(ApiServiceDescriptor.newBuilder().setUrl(endpoint).build());
    JobServiceGrpc.JobServiceBlockingStub jobs = JobServiceGrpc.newBlockingStub(jobChannel);
    try {
      int timeout = portable.getJobServerTimeout();
      PrepareJobResponse prepared =
          jobs.withDeadlineAfter(timeout, TimeUnit.SECONDS)
              .withWaitForReady()
              .prepare(
                  PrepareJobRequest.newBuilder()
                      .setJobName(options.getJobName())
                      .setPipeline(proto)
                      .setPipelineOptions(PipelineOptionsTranslation.toProto(options))
                      .build());
      long start = System.nanoTime();
      ManagedChannel staging = channels.forDescriptor(prepared.getArtifactStagingEndpoint());
      try {
        ArtifactStagingService.offer(
            new ArtifactRetrievalService(),
            ArtifactStagingServiceGrpc.newStub(staging),
            prepared.getStagingSessionToken());
      } finally {
        staging.shutdown();
      }
      LOG.info(
          "weir: staged {} files in {} ms",
          portable.getFilesToStage().size(),
          (System.nanoTime() - start) / 1_000_000);
      String jobId =
          jobs.run(
                  RunJobRequest.newBuilder()
                      .setPreparationId(prepared.getPreparationId())
                      .build())
              .getJobId();
      LOG.info("weir: job {} submitted to {}", jobId, endpoint);
      return new WeirPipelineResult(jobChannel, endpoint, jobId, loopback);
    } catch (Exception e) {
      jobChannel.shutdown();
      closeQuietly(loopback);
      if (e instanceof RuntimeException) {
        throw (RuntimeException) e;
      }
      throw new RuntimeException("weir: submitting the job: " + e, e);
    }
  }

  static void closeQuietly(AutoCloseable c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (Exception e) {
      LOG.warn("weir: closing {}", c, e);
    }
  }

  @Override
  public String toString() {
    return "WeirRunner";
  }
}
