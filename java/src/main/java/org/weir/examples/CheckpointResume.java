package org.weir.examples;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.coders.AtomicCoder;
import org.apache.beam.sdk.coders.Coder;
import org.apache.beam.sdk.coders.VarLongCoder;
import org.apache.beam.sdk.io.Read;
import org.apache.beam.sdk.io.UnboundedSource;
import org.apache.beam.sdk.options.Default;
import org.apache.beam.sdk.options.Description;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.options.Validation;
import org.apache.beam.sdk.state.StateSpec;
import org.apache.beam.sdk.state.StateSpecs;
import org.apache.beam.sdk.state.ValueState;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.transforms.WithKeys;
import org.apache.beam.sdk.transforms.windowing.BoundedWindow;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.TypeDescriptors;
import org.checkerframework.checker.nullness.qual.Nullable;
import org.joda.time.Instant;
import org.weir.runner.WeirPipelineResult;

/**
 * A streaming job that resumes from its checkpoint: ticks 0, 1, 2, ... of an {@link
 * UnboundedSource} (which Beam runs as a splittable DoFn, its checkpoint mark in the restriction),
 * counted by a stateful DoFn under one key; each tick appends "tick count" to --output. Run it
 * with weir's checkpoints ({@code --weirCheckpointInterval=1s}) under a fixed {@code --jobName},
 * kill the server, and submit it again under that name to a server on the same {@code
 * --state-dir}: the second run's first line is not "0 1" but continues from the checkpoint, the
 * source's position (the mark) and the count (the DoFn's state) together, so that count is still
 * tick + 1. java/run.sh test does that.
 *
 * <p>It prints the job's id ("job ID") and its messages ("message: IMPORTANCE text") as they come,
 * and runs until the job ends.
 */
public class CheckpointResume {
  /** The example's own flags. */
  public interface Options extends PipelineOptions {
    @Description("the file each tick appends \"tick count\" to")
    @Validation.Required
    String getOutput();

    void setOutput(String value);

    @Description("milliseconds between ticks")
    @Default.Long(100)
    Long getTickMillis();

    void setTickMillis(Long value);
  }

  /**
   * Ticks 0, 1, 2, ..., one every period, each stamped with the event time tick × period (since
   * the epoch). It does not split, so one reader emits every tick in order and a count of them
   * all is tick + 1 (GenerateSequence's source splits into 20 readers, each of every 20th number);
   * its checkpoint mark is the next tick. Beam's Java SDK reads it as a splittable DoFn whose
   * restriction holds the source and that mark: weir's checkpoint keeps the SDF's residual, so
   * the restored reader starts at the mark.
   */
  static class TickSource extends UnboundedSource<Long, TickSource.Mark> {
    private static final long serialVersionUID = 1L;
    final long periodMillis;

    TickSource(long periodMillis) {
      this.periodMillis = periodMillis;
    }

    /** Where a reader goes on: the next tick it emits. */
    static class Mark implements UnboundedSource.CheckpointMark {
      final long next;

      Mark(long next) {
        this.next = next;
      }

      @Override
      public void finalizeCheckpoint() {}
    }

    static class MarkCoder extends AtomicCoder<Mark> {
      @Override
      public void encode(Mark m, OutputStream out) throws IOException {
        VarLongCoder.of().encode(m.next, out);
      }

      @Override
      public Mark decode(InputStream in) throws IOException {
        return new Mark(VarLongCoder.of().decode(in));
      }
    }

    @Override
    public List<TickSource> split(int desiredNumSplits, PipelineOptions options) {
      return Collections.singletonList(this);
    }

    @Override
    public UnboundedReader<Long> createReader(PipelineOptions options, @Nullable Mark mark) {
      return new Reader(this, mark == null ? 0 : mark.next);
    }

    @Override
    public Coder<Mark> getCheckpointMarkCoder() {
      return new MarkCoder();
    }

    @Override
    public Coder<Long> getOutputCoder() {
      return VarLongCoder.of();
    }

    static class Reader extends UnboundedReader<Long> {
      private final TickSource source;
      private long next;
      private long current = -1;
      private long dueMillis;

      Reader(TickSource source, long next) {
        this.source = source;
        this.next = next;
      }

      @Override
      public boolean start() {
        dueMillis = System.currentTimeMillis();
        return advance();
      }

      /** The next tick once its time has come; false (nothing yet) before. */
      @Override
      public boolean advance() {
        long now = System.currentTimeMillis();
        if (now < dueMillis) {
          return false;
        }
        current = next++;
        dueMillis = now + source.periodMillis;
        return true;
      }

      @Override
      public Long getCurrent() {
        if (current < 0) {
          throw new NoSuchElementException();
        }
        return current;
      }

      @Override
      public Instant getCurrentTimestamp() {
        return new Instant(getCurrent() * source.periodMillis);
      }

      @Override
      public Instant getWatermark() {
        return current < 0
            ? BoundedWindow.TIMESTAMP_MIN_VALUE
            : new Instant(current * source.periodMillis);
      }

      @Override
      public Mark getCheckpointMark() {
        return new Mark(next);
      }

      @Override
      public TickSource getCurrentSource() {
        return source;
      }

      @Override
      public void close() {}
    }
  }

  /** Counts the ticks of each key in its state and appends "tick count" to a file, flushed. */
  static class CountTicks extends DoFn<KV<String, Long>, String> {
    private final String path;

    @StateId("count")
    private final StateSpec<ValueState<Long>> countSpec = StateSpecs.value(VarLongCoder.of());

    CountTicks(String path) {
      this.path = path;
    }

    @ProcessElement
    public void process(
        @Element KV<String, Long> tick,
        @StateId("count") ValueState<Long> count,
        OutputReceiver<String> out) {
      Long before = count.read();
      long c = (before == null ? 0 : before) + 1;
      count.write(c);
      String line = tick.getValue() + " " + c;
      append(path, line);
      out.output(line);
    }

    /** Appends a line and closes the file, so a crash right after loses nothing written. */
    static synchronized void append(String path, String line) {
      try {
        Files.write(
            Paths.get(path),
            (line + "\n").getBytes(StandardCharsets.UTF_8),
            StandardOpenOption.CREATE,
            StandardOpenOption.APPEND);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  public static void main(String[] args) {
    Options options = PipelineOptionsFactory.fromArgs(args).withValidation().as(Options.class);
    Pipeline p = Pipeline.create(options);
    p.apply("Ticks", Read.from(new TickSource(options.getTickMillis())))
        .apply("Key", WithKeys.<String, Long>of("k").withKeyType(TypeDescriptors.strings()))
        .apply("Count", ParDo.of(new CountTicks(options.getOutput())));
    PipelineResult result = p.run();
    if (result instanceof WeirPipelineResult) {
      WeirPipelineResult weir = (WeirPipelineResult) result;
      System.out.println("job " + weir.jobId());
      weir.followMessages(
          m -> System.out.println("message: " + m.getImportance() + " " + m.getMessageText()));
    }
    PipelineResult.State state = result.waitUntilFinish();
    System.out.println("job ended " + state);
    System.exit(state == PipelineResult.State.CANCELLED || state == PipelineResult.State.DONE ? 0 : 1);
  }
}
