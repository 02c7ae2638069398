package org.weir.runner;

import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.beam.model.jobmanagement.v1.JobApi;
import org.apache.beam.model.jobmanagement.v1.JobServiceGrpc;
import org.apache.beam.model.pipeline.v1.Endpoints.ApiServiceDescriptor;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.fn.channel.ManagedChannelFactory;
import org.apache.beam.sdk.metrics.MetricResults;
import org.apache.beam.vendor.grpc.v1p69p0.io.grpc.ManagedChannel;
import org.apache.beam.vendor.grpc.v1p69p0.io.grpc.StatusRuntimeException;
import org.joda.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A job running on weir, followed through the job service. */
public class WeirPipelineResult implements PipelineResult {
  private static final Logger LOG = LoggerFactory.getLogger(WeirPipelineResult.class);

  private final ManagedChannel channel;
  private final String jobId;
  private final AutoCloseable loopback;
  private final JobServiceGrpc.JobServiceBlockingStub jobs;
  private final String endpoint;
  private volatile State terminal;
  private volatile String errors = "";

  WeirPipelineResult(
      ManagedChannel channel, String endpoint, String jobId, AutoCloseable loopback) {
    this.channel = channel;
    this.endpoint = endpoint;
    this.jobId = jobId;
    this.loopback = loopback;
    this.jobs = JobServiceGrpc.newBlockingStub(channel);
  }

  /** The job's id on the weir server, as {@code weir jobs} lists it. */
  public String jobId() {
    return jobId;
  }

  @Override
  public State getState() {
    if (terminal != null) {
      return terminal;
    }
    return toState(
        jobs.getState(JobApi.GetJobStateRequest.newBuilder().setJobId(jobId).build()).getState());
  }

  @Override
  public State cancel() {
    return toState(
        jobs.cancel(JobApi.CancelJobRequest.newBuilder().setJobId(jobId).build()).getState());
  }

  @Override
  public State waitUntilFinish(Duration duration) {
    if (terminal != null) {
      return terminal;
    }
    JobServiceGrpc.JobServiceBlockingStub stub = jobs;
    if (duration != null && duration.getMillis() > 0) {
      stub = stub.withDeadlineAfter(duration.getMillis(), TimeUnit.MILLISECONDS);
    }
    try {
      Iterator<JobApi.JobStateEvent> events =
          stub.getStateStream(JobApi.GetJobStateRequest.newBuilder().setJobId(jobId).build());
      while (events.hasNext()) {
        State s = toState(events.next().getState());
        if (s.isTerminal()) {
          finish(s);
          return s;
        }
      }
    } catch (StatusRuntimeException e) {
      if (duration != null && duration.getMillis() > 0) {
        return null; // Beam's contract: null when the duration passed first
      }
      throw new RuntimeException("weir: following job " + jobId + ": " + e.getStatus(), e);
    }
    State s = getState();
    if (s.isTerminal()) {
      finish(s);
    }
    return s;
  }

  @Override
  public State waitUntilFinish() {
    return waitUntilFinish(Duration.ZERO);
  }

  /**
   * The job's metrics as the job service reports them (GetJobMetrics): attempted values from every
   * bundle, committed values from bundles whose output was committed.
   */
  @Override
  public MetricResults metrics() {
    // A channel of its own: finishing the job shut the first one down, and
    // metrics are read after that.
    ManagedChannel ch =
        ManagedChannelFactory.createDefault()
            .forDescriptor(ApiServiceDescriptor.newBuilder().setUrl(endpoint).build());
    try {
      JobApi.GetJobMetricsResponse resp =
          JobServiceGrpc.newBlockingStub(ch)
              .withDeadlineAfter(30, TimeUnit.SECONDS)
              .getJobMetrics(JobApi.GetJobMetricsRequest.newBuilder().setJobId(jobId).build());
      return WeirMetrics.toResults(resp.getMetrics());
    } catch (StatusRuntimeException e) {
      throw new RuntimeException("weir: reading job " + jobId + " metrics: " + e.getStatus(), e);
    } finally {
      ch.shutdown();
    }
  }

  /**
   * Calls {@code f} with each of the job's messages (weir's "restored from checkpoint ...", its
   * checkpoints, warnings), from the first, on a daemon thread of its own, until the job ends or
   * the job service goes away. Returns at once.
   */
  public void followMessages(Consumer<JobApi.JobMessage> f) {
    ManagedChannel ch =
        ManagedChannelFactory.createDefault()
            .forDescriptor(ApiServiceDescriptor.newBuilder().setUrl(endpoint).build());
    Thread t =
        new Thread(
            () -> {
              try {
                Iterator<JobApi.JobMessagesResponse> messages =
                    JobServiceGrpc.newBlockingStub(ch)
                        .getMessageStream(
                            JobApi.JobMessagesRequest.newBuilder().setJobId(jobId).build());
                while (messages.hasNext()) {
                  JobApi.JobMessagesResponse m = messages.next();
                  // Read to the stream's end, not to the terminal state:
                  // Prism sends a failed job's error after it.
                  if (m.hasMessageResponse()) {
                    f.accept(m.getMessageResponse());
                  }
                }
              } catch (StatusRuntimeException e) {
                LOG.debug("weir: following job {} messages: {}", jobId, e.getStatus());
              } finally {
                ch.shutdown();
              }
            },
            "weir-messages-" + jobId);
    t.setDaemon(true);
    t.start();
  }

  /**
   * Why the job failed, from its error messages; empty when it did not fail or said nothing. The
   * messages are read once, when the job reaches a terminal state.
   */
  public String errors() {
    return errors;
  }

  private synchronized void finish(State s) {
    if (terminal != null) {
      return;
    }
    terminal = s;
    if (s == State.FAILED) {
      errors = readErrors();
      LOG.error("weir: job {} failed: {}", jobId, errors);
    }
    WeirRunner.closeQuietly(loopback);
    channel.shutdown();
  }

  /** The job's error messages, which say why it failed, one a line. */
  private String readErrors() {
    StringBuilder out = new StringBuilder();
    try {
      Iterator<JobApi.JobMessagesResponse> messages =
          jobs.withDeadlineAfter(5, TimeUnit.SECONDS)
              .getMessageStream(JobApi.JobMessagesRequest.newBuilder().setJobId(jobId).build());
      while (messages.hasNext()) {
        JobApi.JobMessagesResponse m = messages.next();
        if (m.hasMessageResponse()
            && m.getMessageResponse().getImportance().getNumber()
                >= JobApi.JobMessage.MessageImportance.JOB_MESSAGE_WARNING.getNumber()) {
          if (out.length() > 0) {
            out.append('\n');
          }
          out.append(m.getMessageResponse().getMessageText());
        }
      }
    } catch (StatusRuntimeException e) {
      LOG.debug("weir: reading job {} messages: {}", jobId, e.getStatus());
    }
    return out.toString();
  }

  static State toState(JobApi.JobState.Enum s) {
    switch (s) {
      case STOPPED:
        return State.STOPPED;
      case STARTING:
      case RUNNING:
      case DRAINING:
      case CANCELLING:
      case UPDATING:
        return State.RUNNING;
      case DONE:
      case DRAINED:
        return State.DONE;
      case FAILED:
        return State.FAILED;
      case CANCELLED:
        return State.CANCELLED;
      case UPDATED:
        return State.UPDATED;
      default:
        return State.UNKNOWN;
    }
  }
}
