package org.weir.examples;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.coders.KvCoder;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.apache.beam.sdk.coders.VarIntCoder;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.io.GenerateSequence;
import org.apache.beam.sdk.io.range.OffsetRange;
import org.apache.beam.sdk.state.BagState;
import org.apache.beam.sdk.state.CombiningState;
import org.apache.beam.sdk.state.MapState;
import org.apache.beam.sdk.state.SetState;
import org.apache.beam.sdk.state.StateSpec;
import org.apache.beam.sdk.state.StateSpecs;
import org.apache.beam.sdk.state.TimeDomain;
import org.apache.beam.sdk.state.Timer;
import org.apache.beam.sdk.state.TimerSpec;
import org.apache.beam.sdk.state.TimerSpecs;
import org.apache.beam.sdk.state.ValueState;
import org.apache.beam.sdk.testing.PAssert;
import org.apache.beam.sdk.testing.TestStream;
import org.apache.beam.sdk.transforms.Combine;
import org.apache.beam.sdk.transforms.Count;
import org.apache.beam.sdk.transforms.Create;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.Flatten;
import org.apache.beam.sdk.transforms.GroupByKey;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.transforms.Reshuffle;
import org.apache.beam.sdk.transforms.Sum;
import org.apache.beam.sdk.transforms.splittabledofn.RestrictionTracker;
import org.apache.beam.sdk.transforms.View;
import org.apache.beam.sdk.transforms.WithTimestamps;
import org.apache.beam.sdk.transforms.join.CoGbkResult;
import org.apache.beam.sdk.transforms.join.CoGroupByKey;
import org.apache.beam.sdk.transforms.join.KeyedPCollectionTuple;
import org.apache.beam.sdk.transforms.windowing.AfterWatermark;
import org.apache.beam.sdk.transforms.windowing.BoundedWindow;
import org.apache.beam.sdk.transforms.windowing.FixedWindows;
import org.apache.beam.sdk.transforms.windowing.IntervalWindow;
import org.apache.beam.sdk.transforms.windowing.Sessions;
import org.apache.beam.sdk.transforms.windowing.SlidingWindows;
import org.apache.beam.sdk.transforms.windowing.Window;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;
import org.apache.beam.sdk.values.PCollectionList;
import org.apache.beam.sdk.values.PCollectionView;
import org.apache.beam.sdk.values.TupleTag;
import org.apache.beam.sdk.values.TypeDescriptors;
import org.joda.time.Duration;
import org.joda.time.Instant;
import org.weir.runner.WeirPipelineResult;

/**
 * Small Java pipelines that check their own output with PAssert, one job each: what weir runs
 * from Java beyond the word count. {@code Pipelines [name...] --runner=WeirRunner ...} runs the
 * named ones (all by default) and prints one line per pipeline, PASS or its final state; it exits
 * 1 if any did not end DONE.
 */
public class Pipelines {
  static final Map<String, Consumer<Pipeline>> ALL = new LinkedHashMap<>();

  static {
    ALL.put("gbk", Pipelines::gbk);
    ALL.put("combine", Pipelines::combine);
    ALL.put("side-inputs", Pipelines::sideInputs);
    ALL.put("flatten-cogbk", Pipelines::flattenCoGbk);
    ALL.put("stateful-timers", Pipelines::statefulTimers);
    ALL.put("fixed-windows", Pipelines::fixedWindows);
    ALL.put("sliding-windows", Pipelines::slidingWindows);
    ALL.put("sessions", Pipelines::sessions);
    ALL.put("test-stream", Pipelines::testStream);
    ALL.put("state-kinds", Pipelines::stateKinds);
    ALL.put("processing-time-timer", Pipelines::processingTimeTimer);
    ALL.put("generate-sequence", Pipelines::generateSequence);
    ALL.put("reshuffle", Pipelines::reshuffle);
    ALL.put("splittable-dofn", Pipelines::splittable);
    ALL.put("unbounded-source", Pipelines::unboundedSource);
  }

  /**
   * Pipelines whose assertion is wrong on purpose: each must end FAILED, or a PASS above would
   * prove nothing. Run by name only.
   */
  static final Map<String, Consumer<Pipeline>> WRONG = new LinkedHashMap<>();

  static {
    WRONG.put("wrong-gbk", p -> PAssert.that(kvs(p).apply(Sum.integersPerKey()))
        .containsInAnyOrder(KV.of("a", 8), KV.of("b", 2), KV.of("c", 4)));
  }

  static PCollection<KV<String, Integer>> kvs(Pipeline p) {
    return p.apply(
        "KVs",
        Create.of(KV.of("a", 1), KV.of("b", 2), KV.of("a", 3), KV.of("c", 4), KV.of("a", 5)));
  }

  static void gbk(Pipeline p) {
    PCollection<KV<String, Integer>> sums =
        kvs(p)
            .apply(GroupByKey.create())
            .apply(
                MapElements.into(
                        TypeDescriptors.kvs(TypeDescriptors.strings(), TypeDescriptors.integers()))
                    .via(
                        (KV<String, Iterable<Integer>> kv) -> {
                          int s = 0;
                          for (int v : kv.getValue()) {
                            s += v;
                          }
                          return KV.of(kv.getKey(), s);
                        }));
    PAssert.that(sums).containsInAnyOrder(KV.of("a", 9), KV.of("b", 2), KV.of("c", 4));
  }

  static void combine(Pipeline p) {
    PCollection<KV<String, Integer>> in = kvs(p);
    PAssert.that(in.apply("PerKey", Sum.integersPerKey()))
        .containsInAnyOrder(KV.of("a", 9), KV.of("b", 2), KV.of("c", 4));
    PCollection<Integer> values =
        in.apply(MapElements.into(TypeDescriptors.integers()).via(KV::getValue));
    PAssert.thatSingleton(values.apply("Globally", Combine.globally(Sum.ofIntegers())))
        .isEqualTo(15);
    PAssert.that(in.apply("CountPerKey", Count.perKey()))
        .containsInAnyOrder(KV.of("a", 3L), KV.of("b", 1L), KV.of("c", 1L));
  }

  static void sideInputs(Pipeline p) {
    PCollection<KV<String, Integer>> in = kvs(p);
    PCollectionView<Integer> total =
        in.apply(MapElements.into(TypeDescriptors.integers()).via(KV::getValue))
            .apply(Sum.integersGlobally().asSingletonView());
    PCollectionView<List<Integer>> list =
        in.apply("Values", MapElements.into(TypeDescriptors.integers()).via(KV::getValue))
            .apply(View.asList());
    PCollectionView<Map<String, Iterable<Integer>>> multimap = in.apply(View.asMultimap());
    PCollection<String> out =
        p.apply("One", Create.of("a", "c"))
            .apply(
                ParDo.of(
                        new DoFn<String, String>() {
                          @ProcessElement
                          public void process(ProcessContext c) {
                            int n = 0;
                            for (int v : c.sideInput(multimap).get(c.element())) {
                              n += v;
                            }
                            c.output(
                                c.element()
                                    + "="
                                    + n
                                    + "/"
                                    + c.sideInput(total)
                                    + "/"
                                    + c.sideInput(list).size());
                          }
                        })
                    .withSideInputs(total, list, multimap));
    PAssert.that(out).containsInAnyOrder("a=9/15/5", "c=4/15/5");
  }

  static void flattenCoGbk(Pipeline p) {
    PCollection<KV<String, Integer>> a = kvs(p);
    PCollection<KV<String, Integer>> b = p.apply("More", Create.of(KV.of("a", 10), KV.of("d", 7)));
    PCollection<KV<String, Integer>> both =
        PCollectionList.of(a).and(b).apply(Flatten.pCollections());
    PAssert.that(both.apply("Sum", Sum.integersPerKey()))
        .containsInAnyOrder(KV.of("a", 19), KV.of("b", 2), KV.of("c", 4), KV.of("d", 7));
    TupleTag<Integer> left = new TupleTag<>();
    TupleTag<Integer> right = new TupleTag<>();
    PCollection<String> joined =
        KeyedPCollectionTuple.of(left, a)
            .and(right, b)
            .apply(CoGroupByKey.create())
            .apply(
                MapElements.into(TypeDescriptors.strings())
                    .via(
                        (KV<String, CoGbkResult> kv) -> {
                          int l = 0;
                          int r = 0;
                          for (int v : kv.getValue().getAll(left)) {
                            l += v;
                          }
                          for (int v : kv.getValue().getAll(right)) {
                            r += v;
                          }
                          return kv.getKey() + ":" + l + "," + r;
                        }));
    PAssert.that(joined).containsInAnyOrder("a:9,10", "b:2,0", "c:4,0", "d:0,7");
  }

  /** Counts per key in ValueState and emits the count when an event-time timer fires. */
  static class CountThenFire extends DoFn<KV<String, Integer>, String> {
    @StateId("count")
    private final StateSpec<ValueState<Integer>> count = StateSpecs.value(VarIntCoder.of());

    @TimerId("flush")
    private final TimerSpec flush = TimerSpecs.timer(TimeDomain.EVENT_TIME);

    @ProcessElement
    public void process(
        @Element KV<String, Integer> e,
        @StateId("count") ValueState<Integer> count,
        @TimerId("flush") Timer flush,
        BoundedWindow window) {
      Integer n = count.read();
      count.write((n == null ? 0 : n) + 1);
      flush.set(window.maxTimestamp());
    }

    @OnTimer("flush")
    public void onFlush(
        @Key String key, @StateId("count") ValueState<Integer> count, OutputReceiver<String> out) {
      out.output(key + "=" + count.read());
      count.clear();
    }
  }

  static void statefulTimers(Pipeline p) {
    PAssert.that(kvs(p).apply(ParDo.of(new CountThenFire())))
        .containsInAnyOrder("a=3", "b=1", "c=1");
  }

  static PCollection<String> timed(Pipeline p) {
    // Words at event times in seconds.
    return p.apply(
            "Timed",
            Create.of(
                Arrays.asList(
                    KV.of("x", 1L), KV.of("y", 2L), KV.of("x", 5L), KV.of("x", 12L),
                    KV.of("y", 14L), KV.of("x", 40L))))
        .apply(
            WithTimestamps.of((KV<String, Long> kv) -> new Instant(kv.getValue() * 1000)))
        .apply(MapElements.into(TypeDescriptors.strings()).via(KV::getKey));
  }

  static PCollection<String> countsWithWindow(PCollection<String> words) {
    return words
        .apply(Count.perElement())
        .apply(
            ParDo.of(
                new DoFn<KV<String, Long>, String>() {
                  @ProcessElement
                  public void process(ProcessContext c, BoundedWindow w) {
                    IntervalWindow iw = (IntervalWindow) w;
                    c.output(
                        c.element().getKey()
                            + "@"
                            + iw.start().getMillis() / 1000
                            + "-"
                            + iw.end().getMillis() / 1000
                            + "="
                            + c.element().getValue());
                  }
                }));
  }

  static void fixedWindows(Pipeline p) {
    PCollection<String> w =
        timed(p).apply(Window.into(FixedWindows.of(Duration.standardSeconds(10))));
    PAssert.that(countsWithWindow(w))
        .containsInAnyOrder("x@0-10=2", "y@0-10=1", "x@10-20=1", "y@10-20=1", "x@40-50=1");
  }

  static void slidingWindows(Pipeline p) {
    PCollection<String> w =
        timed(p)
            .apply(
                Window.into(
                    SlidingWindows.of(Duration.standardSeconds(20))
                        .every(Duration.standardSeconds(10))));
    PAssert.that(countsWithWindow(w))
        .containsInAnyOrder(
            "x@-10-10=2", "y@-10-10=1", "x@0-20=3", "y@0-20=2", "x@10-30=1", "y@10-30=1",
            "x@30-50=1", "x@40-60=1");
  }

  static void sessions(Pipeline p) {
    PCollection<String> w =
        timed(p).apply(Window.into(Sessions.withGapDuration(Duration.standardSeconds(5))));
    // x: 1,5 merge into [1,10); 12 alone [12,17); 40 [40,45). y: 2 [2,7); 14 [14,19).
    PAssert.that(countsWithWindow(w))
        .containsInAnyOrder("x@1-10=2", "x@12-17=1", "x@40-45=1", "y@2-7=1", "y@14-19=1");
  }

  static void testStream(Pipeline p) {
    TestStream<String> events =
        TestStream.create(StringUtf8Coder.of())
            .addElements(
                org.apache.beam.sdk.values.TimestampedValue.of("a", new Instant(1000)),
                org.apache.beam.sdk.values.TimestampedValue.of("b", new Instant(2000)))
            .advanceWatermarkTo(new Instant(15000))
            .addElements(org.apache.beam.sdk.values.TimestampedValue.of("a", new Instant(12000)))
            .advanceWatermarkToInfinity();
    PCollection<String> w =
        p.apply(events)
            .apply(
                Window.<String>into(FixedWindows.of(Duration.standardSeconds(10)))
                    .triggering(AfterWatermark.pastEndOfWindow())
                    .withAllowedLateness(Duration.ZERO)
                    .discardingFiredPanes());
    PAssert.that(countsWithWindow(w)).containsInAnyOrder("a@0-10=1", "b@0-10=1", "a@10-20=1");
  }

  /** Bag, set, map and combining state; emits per key at the window's end. */
  static class StateKinds extends DoFn<KV<String, Integer>, String> {
    @StateId("bag")
    private final StateSpec<BagState<Integer>> bag = StateSpecs.bag(VarIntCoder.of());

    @StateId("set")
    private final StateSpec<SetState<Integer>> set = StateSpecs.set(VarIntCoder.of());

    @StateId("map")
    private final StateSpec<MapState<Integer, Integer>> map =
        StateSpecs.map(VarIntCoder.of(), VarIntCoder.of());

    @StateId("sum")
    private final StateSpec<CombiningState<Integer, int[], Integer>> sum =
        StateSpecs.combining(Sum.ofIntegers());

    @TimerId("end")
    private final TimerSpec end = TimerSpecs.timer(TimeDomain.EVENT_TIME);

    @ProcessElement
    public void process(
        @Element KV<String, Integer> e,
        @StateId("bag") BagState<Integer> bag,
        @StateId("set") SetState<Integer> set,
        @StateId("map") MapState<Integer, Integer> map,
        @StateId("sum") CombiningState<Integer, int[], Integer> sum,
        @TimerId("end") Timer end,
        BoundedWindow w) {
      bag.add(e.getValue());
      set.add(e.getValue() % 2);
      Integer seen = map.get(e.getValue() % 2).read();
      map.put(e.getValue() % 2, (seen == null ? 0 : seen) + 1);
      sum.add(e.getValue());
      end.set(w.maxTimestamp());
    }

    @OnTimer("end")
    public void onEnd(
        @Key String key,
        @StateId("bag") BagState<Integer> bag,
        @StateId("set") SetState<Integer> set,
        @StateId("map") MapState<Integer, Integer> map,
        @StateId("sum") CombiningState<Integer, int[], Integer> sum,
        OutputReceiver<String> out) {
      int n = 0;
      for (int ignored : bag.read()) {
        n++;
      }
      int distinct = 0;
      for (int ignored : set.read()) {
        distinct++;
      }
      Integer odd = map.get(1).read();
      out.output(key + " n=" + n + " parities=" + distinct + " odd=" + odd + " sum=" + sum.read());
    }
  }

  static void stateKinds(Pipeline p) {
    PAssert.that(kvs(p).apply(ParDo.of(new StateKinds())))
        .containsInAnyOrder(
            "a n=3 parities=1 odd=3 sum=9", "b n=1 parities=1 odd=null sum=2",
            "c n=1 parities=1 odd=null sum=4");
  }

  /** Emits each key once, from a processing-time timer set on its first element. */
  static class ProcessingTimeFlush extends DoFn<KV<String, Integer>, String> {
    @StateId("n")
    private final StateSpec<ValueState<Integer>> n = StateSpecs.value(VarIntCoder.of());

    @TimerId("later")
    private final TimerSpec later = TimerSpecs.timer(TimeDomain.PROCESSING_TIME);

    @ProcessElement
    public void process(
        @Element KV<String, Integer> e,
        @StateId("n") ValueState<Integer> n,
        @TimerId("later") Timer later) {
      Integer v = n.read();
      if (v == null) {
        later.offset(Duration.millis(100)).setRelative();
      }
      n.write((v == null ? 0 : v) + 1);
    }

    @OnTimer("later")
    public void onLater(
        @Key String key, @StateId("n") ValueState<Integer> n, OutputReceiver<String> out) {
      out.output(key + "=" + n.read());
    }
  }

  static void processingTimeTimer(Pipeline p) {
    PAssert.that(kvs(p).apply(ParDo.of(new ProcessingTimeFlush())))
        .containsInAnyOrder("a=3", "b=1", "c=1");
  }

  static void generateSequence(Pipeline p) {
    PAssert.thatSingleton(p.apply(GenerateSequence.from(0).to(1000)).apply(Sum.longsGlobally()))
        .isEqualTo(499500L);
  }

  static void reshuffle(Pipeline p) {
    PAssert.that(kvs(p).apply(Reshuffle.of()).apply(Sum.integersPerKey()))
        .containsInAnyOrder(KV.of("a", 9), KV.of("b", 2), KV.of("c", 4));
    PAssert.that(p.apply("Ints", Create.of(1, 2, 3)).apply(Reshuffle.viaRandomKey()))
        .containsInAnyOrder(1, 2, 3);
  }

  /** Emits 0..n-1 for each n, one restriction offset at a time. */
  static class Count0ToN extends DoFn<Long, Long> {
    @ProcessElement
    public void process(
        @Element Long n, RestrictionTracker<OffsetRange, Long> tracker, OutputReceiver<Long> out) {
      for (long i = tracker.currentRestriction().getFrom(); tracker.tryClaim(i); i++) {
        out.output(i);
      }
    }

    @GetInitialRestriction
    public OffsetRange initial(@Element Long n) {
      return new OffsetRange(0, n);
    }

    @SplitRestriction
    public void split(@Restriction OffsetRange r, OutputReceiver<OffsetRange> out) {
      for (OffsetRange part : r.split(10, 1)) {
        out.output(part);
      }
    }
  }

  static void splittable(Pipeline p) {
    PAssert.thatSingleton(
            p.apply("Ns", Create.of(100L, 50L))
                .apply(ParDo.of(new Count0ToN()))
                .apply(Sum.longsGlobally()))
        .isEqualTo(4950L + 1225L);
  }

  static void unboundedSource(Pipeline p) {
    // An unbounded source read to a number of records (Read.Unbounded behind
    // BoundedReadFromUnboundedSource), windowed by its own timestamps.
    PCollection<Long> ticks =
        p.apply(
            GenerateSequence.from(0)
                .to(40)
                .withRate(40, Duration.standardSeconds(1))
                .withTimestampFn(i -> new Instant(i * 100)));
    PAssert.that(
            ticks
                .apply(Window.into(FixedWindows.of(Duration.standardSeconds(1))))
                .apply(Combine.globally(Sum.ofLongs()).withoutDefaults()))
        .containsInAnyOrder(45L, 145L, 245L, 345L);
  }

  /**
   * Pipelines weir must refuse at submission: each must end FAILED with weir's refusal, naming the
   * transform and what it needs, before any bundle runs. Run by name only.
   */
  static final Map<String, Consumer<Pipeline>> REFUSED = new LinkedHashMap<>();

  /** Elements a refused pipeline's DoFns saw: LOOPBACK runs them in this process. */
  static final AtomicInteger REFUSED_PROCESSED = new AtomicInteger();

  static {
    REFUSED.put("refused-time-sorted", p -> kvs(p).apply("TimeSorted", ParDo.of(new TimeSorted())));
  }

  /** A stateful DoFn that asks for its input sorted by event time, which weir does not do. */
  static class TimeSorted extends DoFn<KV<String, Integer>, Integer> {
    @StateId("last")
    private final StateSpec<ValueState<Integer>> last = StateSpecs.value(VarIntCoder.of());

    @RequiresTimeSortedInput
    @ProcessElement
    public void process(@Element KV<String, Integer> e, @StateId("last") ValueState<Integer> last) {
      REFUSED_PROCESSED.incrementAndGet();
      last.write(e.getValue());
    }
  }

  public static void main(String[] args) {
    List<String> names = new ArrayList<>();
    List<String> flags = new ArrayList<>();
    for (String a : args) {
      (a.startsWith("--") ? flags : names).add(a);
    }
    if (names.isEmpty()) {
      names.addAll(ALL.keySet());
    }
    int failed = 0;
    for (String name : names) {
      Consumer<Pipeline> build = ALL.getOrDefault(name, WRONG.getOrDefault(name, REFUSED.get(name)));
      if (build == null) {
        System.err.println("pipelines: no pipeline " + name + "; there are " + ALL.keySet() + " and " + WRONG.keySet());
        System.exit(2);
      }
      PipelineOptions options =
          PipelineOptionsFactory.fromArgs(flags.toArray(new String[0])).withValidation().create();
      options.setJobName("java-" + name + "-" + System.nanoTime());
      Pipeline p = Pipeline.create(options);
      String result;
      try {
        build.accept(p);
        PipelineResult run = p.run();
        PipelineResult.State state = run.waitUntilFinish();
        result = state == PipelineResult.State.DONE ? "PASS" : "FAIL: the job ended " + state;
        if (REFUSED.containsKey(name) && run instanceof WeirPipelineResult) {
          result =
              "REFUSED after "
                  + REFUSED_PROCESSED.get()
                  + " elements ("
                  + state
                  + "): "
                  + ((WeirPipelineResult) run).errors().replace('\n', ' ');
        }
      } catch (RuntimeException e) {
        result = "FAIL: " + e;
      }
      if (!result.equals("PASS")) {
        failed++;
      }
      System.out.println("pipeline " + name + ": " + result);
    }
    System.exit(failed == 0 ? 0 : 1);
  }
}
