// Code generated from joboptions/declare.go by `go test ./joboptions -rewrite`. DO NOT EDIT.

package org.weir.runner;

import org.apache.beam.sdk.options.Description;
import org.apache.beam.sdk.options.PipelineOptions;

/**
 * weir's job options, as flags of a Java pipeline: {@code --weirCheckpointInterval=10s}. Each is
 * sent to the job service as {@code beam:option:weir_checkpoint_interval:v1}, the name the Go and
 * Python SDKs use; the server checks the values when the job is submitted and refuses the job,
 * naming the option, when one does not fit. An option left unset takes the server's default
 * (docs/options.md).
 */
@Description("weir's job options (docs/options.md)")
public interface WeirPipelineOptions extends PipelineOptions {

  /** {@code --weirDeadLetter}: append elements dropped as too late to this JSON-lines file. */
  @Description("append elements dropped as too late to this JSON-lines file (path; default: none: late data is counted only)")
  String getWeirDeadLetter();

  void setWeirDeadLetter(String value);

  /** {@code --weirCombineLifting}: run combines lifted (precombine before the shuffle); false runs them on grouped values. */
  @Description("run combines lifted (precombine before the shuffle); false runs them on grouped values (bool; default: true)")
  Boolean getWeirCombineLifting();

  void setWeirCombineLifting(Boolean value);

  /** {@code --weirAdaptivePrecombine}: convert inputs to accumulators one by one where a combine's precombine does not reduce them; false always precombines. */
  @Description("convert inputs to accumulators one by one where a combine's precombine does not reduce them; false always precombines (bool; default: true)")
  Boolean getWeirAdaptivePrecombine();

  void setWeirAdaptivePrecombine(Boolean value);

  /** {@code --weirAdaptiveUnlift}: run a lifted combine unlifted when its first bundle finds keys that do not repeat; false keeps it lifted. */
  @Description("run a lifted combine unlifted when its first bundle finds keys that do not repeat; false keeps it lifted (bool; default: true)")
  Boolean getWeirAdaptiveUnlift();

  void setWeirAdaptiveUnlift(Boolean value);

  /** {@code --weirInlineGroupBytes}: bytes of a group's values sent to the SDK inline; the rest is read from the runner's store (0: the default, 4 MiB; negative: always whole). */
  @Description("bytes of a group's values sent to the SDK inline; the rest is read from the runner's store (0: the default, 4 MiB; negative: always whole) (int; default: 4194304)")
  Long getWeirInlineGroupBytes();

  void setWeirInlineGroupBytes(Long value);

  /** {@code --weirSourceParallelism}: subtasks of every source that reads its input in shares (a Kafka read's partitions) and whose configuration sets no parallelism. */
  @Description("subtasks of every source that reads its input in shares (a Kafka read's partitions) and whose configuration sets no parallelism (int; default: each source's own: 1 for a Kafka read)")
  Long getWeirSourceParallelism();

  void setWeirSourceParallelism(Long value);

  /** {@code --weirInputSpreadWarning}: warn when the inputs of a join or flatten are this far apart in event time (0: never). */
  @Description("warn when the inputs of a join or flatten are this far apart in event time (0: never) (duration; default: 10m)")
  String getWeirInputSpreadWarning();

  void setWeirInputSpreadWarning(String value);

  /** {@code --weirMaxBundleElements}: elements of input that close a bundle. */
  @Description("elements of input that close a bundle (int; default: 65536)")
  Long getWeirMaxBundleElements();

  void setWeirMaxBundleElements(Long value);

  /** {@code --weirMaxBundleBytes}: bytes of input that close a bundle. */
  @Description("bytes of input that close a bundle (int; default: 16 MiB)")
  Long getWeirMaxBundleBytes();

  void setWeirMaxBundleBytes(Long value);

  /** {@code --weirMaxBundleTime}: how long after its first element a bundle closes if nothing else closed it. */
  @Description("how long after its first element a bundle closes if nothing else closed it (duration; default: 1s)")
  String getWeirMaxBundleTime();

  void setWeirMaxBundleTime(String value);

  /** {@code --weirStreamBundleOutput}: on: a bundle's output goes downstream as the SDK sends it; off: when the bundle ends; auto: on for jobs that take checkpoints (a worker lost after output left restarts the job from one), off for the rest. */
  @Description("on: a bundle's output goes downstream as the SDK sends it; off: when the bundle ends; auto: on for jobs that take checkpoints (a worker lost after output left restarts the job from one), off for the rest (enum; default: auto)")
  String getWeirStreamBundleOutput();

  void setWeirStreamBundleOutput(String value);

  /** {@code --weirCheckpointInterval}: take a checkpoint this often (e.g. 10s). */
  @Description("take a checkpoint this often (e.g. 10s) (duration; default: off: no checkpoints)")
  String getWeirCheckpointInterval();

  void setWeirCheckpointInterval(String value);

  /** {@code --weirCheckpointDir}: the checkpoint folder. */
  @Description("the checkpoint folder (path; default: <state dir>/jobs/<job name>/checkpoints)")
  String getWeirCheckpointDir();

  void setWeirCheckpointDir(String value);

  /** {@code --weirCheckpointMode}: aligned, unaligned, or aligned-timeout (aligned until --weirCheckpointAlignedTimeout). */
  @Description("aligned, unaligned, or aligned-timeout (aligned until --weirCheckpointAlignedTimeout) (enum; default: aligned)")
  String getWeirCheckpointMode();

  void setWeirCheckpointMode(String value);

  /** {@code --weirCheckpointAlignedTimeout}: with aligned-timeout, go unaligned this long after the trigger (required there). */
  @Description("with aligned-timeout, go unaligned this long after the trigger (required there) (duration; default: unset)")
  String getWeirCheckpointAlignedTimeout();

  void setWeirCheckpointAlignedTimeout(String value);

  /** {@code --weirCheckpointTimeout}: expire a checkpoint not complete this long after its trigger. */
  @Description("expire a checkpoint not complete this long after its trigger (duration; default: 10m)")
  String getWeirCheckpointTimeout();

  void setWeirCheckpointTimeout(String value);

  /** {@code --weirCheckpointTolerableFailures}: checkpoint failures in a row the job survives; one more fails it. */
  @Description("checkpoint failures in a row the job survives; one more fails it (int; default: 0)")
  Long getWeirCheckpointTolerableFailures();

  void setWeirCheckpointTolerableFailures(Long value);

  /** {@code --weirCheckpointKeep}: completed checkpoints kept (0: the default). */
  @Description("completed checkpoints kept (0: the default) (int; default: 3)")
  Long getWeirCheckpointKeep();

  void setWeirCheckpointKeep(Long value);

  /** {@code --weirRestore}: resume from the newest checkpoint in the checkpoint folder; false starts over. */
  @Description("resume from the newest checkpoint in the checkpoint folder; false starts over (bool; default: true)")
  Boolean getWeirRestore();

  void setWeirRestore(Boolean value);

  /** {@code --weirRestartAttempts}: restarts from the last checkpoint after the job fails, in a row without a checkpoint completing between them; 0 fails it at once (needs --weirCheckpointInterval). */
  @Description("restarts from the last checkpoint after the job fails, in a row without a checkpoint completing between them; 0 fails it at once (needs --weirCheckpointInterval) (int; default: 3)")
  Long getWeirRestartAttempts();

  void setWeirRestartAttempts(Long value);

  /** {@code --weirRestartDelay}: wait this long before each restart (needs --weirCheckpointInterval). */
  @Description("wait this long before each restart (needs --weirCheckpointInterval) (duration; default: 1s)")
  String getWeirRestartDelay();

  void setWeirRestartDelay(String value);

  /** {@code --weirSavepoint}: start from the savepoint in this folder (needs --weirCheckpointInterval). */
  @Description("start from the savepoint in this folder (needs --weirCheckpointInterval) (path; default: unset)")
  String getWeirSavepoint();

  void setWeirSavepoint(String value);

  /** {@code --weirSavepointRename}: transforms renamed since the savepoint, as old=new,old2=new2. */
  @Description("transforms renamed since the savepoint, as old=new,old2=new2 (mapping; default: unset)")
  String getWeirSavepointRename();

  void setWeirSavepointRename(String value);

  /** {@code --weirSavepointAllowDroppedState}: drop savepoint state no transform of the job takes, instead of refusing the savepoint. */
  @Description("drop savepoint state no transform of the job takes, instead of refusing the savepoint (bool; default: false)")
  Boolean getWeirSavepointAllowDroppedState();

  void setWeirSavepointAllowDroppedState(Boolean value);

  /** {@code --weirHttpAddr}: in-process runner (--runner=weir) only: serve /metrics and the web UI on this address, e.g. localhost:8081; weir serve has --http-addr and ignores it. */
  @Description("in-process runner (--runner=weir) only: serve /metrics and the web UI on this address, e.g. localhost:8081; weir serve has --http-addr and ignores it (string; default: unset)")
  String getWeirHttpAddr();

  void setWeirHttpAddr(String value);
}
