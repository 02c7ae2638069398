"""What Beam's Python SDK sends that weir runs, or refuses at submission.

Each test runs a Python pipeline on a real `weir serve` (weirtest.Server)
with a LOOPBACK worker. Refusals must come at submission (the job fails
before any bundle), naming the transform and the URN.
"""

import os
import unittest

import pytest

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.testing.util import assert_that
from apache_beam.testing.util import equal_to
from apache_beam.transforms import userstate
from apache_beam.transforms import window
from apache_beam.utils.timestamp import Timestamp

import weirtest


@pytest.fixture(scope="module")
def server():
  s = weirtest.Server()
  yield s
  s.stop()


options = weirtest.pipeline_options


def _ordered_buffer(coder):
  """A DoFn that keeps every value of a key in ordered-list state of
  coder, and in a later bundle (an event-time timer's, which fires once
  the input is done) emits them in order, then a range read, then what a
  range clear leaves. The later bundle reads what the runner stored."""

  class OrderedBuffer(beam.DoFn):
    BUFFER = userstate.OrderedListStateSpec("buffer", coder)
    FLUSH = userstate.TimerSpec("flush", userstate.TimeDomain.WATERMARK)

    def process(self, element, buf=beam.DoFn.StateParam(BUFFER),
                flush=beam.DoFn.TimerParam(FLUSH)):
      _, (sort, value) = element
      buf.add((Timestamp(sort), value))
      flush.set(0)

    @userstate.on_timer(FLUSH)
    def emit(self, key=beam.DoFn.KeyParam, buf=beam.DoFn.StateParam(BUFFER)):
      yield key, [v for _, v in buf.read()]
      yield key, [v for _, v in buf.read_range(Timestamp(2), Timestamp(4))]
      buf.clear_range(Timestamp(0), Timestamp(3))
      yield key, [v for _, v in buf.read()]

  return OrderedBuffer()


@pytest.mark.parametrize(
    "coder,values",
    [
        # A coder weir knows (varint) and one it does not (pickled), each
        # length-prefixed by Python's framing of ordered-list entries.
        (coders.VarIntCoder(), [50, 10, 40, 20, 30]),
        (coders.PickleCoder(), ["e", "a", "d", "b", "c"]),
    ],
    ids=["known-coder", "pickled-coder"])
def test_ordered_list_state(server, coder, values):
  sorts = [5, 1, 4, 2, 3]
  ordered = [v for _, v in sorted(zip(sorts, values))]
  with beam.Pipeline(options=options(server)) as p:
    out = (
        p
        | beam.Create([("k", (s, v)) for s, v in zip(sorts, values)],
                      reshuffle=False)
        | beam.ParDo(_ordered_buffer(coder)))
    assert_that(out, equal_to([("k", ordered), ("k", ordered[1:3]),
                               ("k", ordered[2:])]))


class _EvenOdd(window.NonMergingWindowFn):
  """A custom (pickled) window function over interval windows: even
  timestamps in [0, 10), odd ones in [10, 20)."""

  def assign(self, context):
    if context.timestamp % 2 == 0:
      return [window.IntervalWindow(0, 10)]
    return [window.IntervalWindow(10, 20)]

  def get_window_coder(self):
    return coders.IntervalWindowCoder()


def test_custom_window_fn(server):
  with beam.Pipeline(options=options(server)) as p:
    out = (
        p
        | beam.Create([1, 2, 3, 4, 6])
        | beam.Map(lambda t: window.TimestampedValue(("k", t), t))
        | beam.WindowInto(_EvenOdd())
        | beam.GroupByKey()
        | beam.Map(lambda kv: (kv[0], sorted(kv[1]))))
    assert_that(out, equal_to([("k", [2, 4, 6]), ("k", [1, 3])]))


def test_union_flatten_and_cogbk(server):
  """Python's CoGroupByKey flattens its tagged inputs into a union coder."""
  with beam.Pipeline(options=options(server)) as p:
    a = p | "A" >> beam.Create([("x", 1), ("y", 2)])
    b = p | "B" >> beam.Create([("x", "one")])
    out = ({"a": a, "b": b} | beam.CoGroupByKey()
           | beam.MapTuple(lambda k, v: (k, sorted(v["a"]), sorted(v["b"]))))
    assert_that(out, equal_to([("x", [1], ["one"]), ("y", [2], [])]))


def test_packed_combines(server):
  """pack_combiners (Python's default pre-optimization) packs sibling
  combines into one."""
  with beam.Pipeline(options=options(server)) as p:
    nums = p | beam.Create([1, 2, 3, 4])
    total = nums | "Sum" >> beam.CombineGlobally(sum)
    biggest = nums | "Max" >> beam.CombineGlobally(max)
    count = nums | "Count" >> beam.combiners.Count.Globally()
    assert_that(total, equal_to([10]), label="sum")
    assert_that(biggest, equal_to([4]), label="max")
    assert_that(count, equal_to([4]), label="count")


def test_side_input_kinds(server):
  with beam.Pipeline(options=options(server)) as p:
    main = p | "Main" >> beam.Create(["a", "b"])
    side = p | "Side" >> beam.Create([("a", 1), ("a", 2), ("b", 3)])
    single = p | "Single" >> beam.Create([10])
    out = main | beam.Map(
        lambda k, m, d, s, l: (k, sorted(m[k]), d.get(k), s, sorted(l)),
        beam.pvalue.AsMultiMap(side),
        beam.pvalue.AsDict(side | "Last" >> beam.CombinePerKey(max)),
        beam.pvalue.AsSingleton(single),
        beam.pvalue.AsList(single))
    assert_that(out, equal_to([("a", [1, 2], 2, 10, [10]),
                               ("b", [3], 3, 10, [10])]))


def test_streaming_no_op_composite(server):
  """Without pre-optimization (as in streaming), Python leaves composites
  with no parts whose output is their input (Create's MaybeReshuffle)."""
  with beam.Pipeline(options=options(
      server, "--experiments=pre_optimize=none")) as p:
    out = p | beam.Create([1, 2, 3], reshuffle=False) | beam.Map(lambda x: x * 2)
    assert_that(out, equal_to([2, 4, 6]))


class _Merging(window.WindowFn):
  """A custom merging window function: weir merges only sessions."""

  def assign(self, context):
    return [window.IntervalWindow(context.timestamp, context.timestamp + 1)]

  def merge(self, merge_context):
    pass

  def get_window_coder(self):
    return coders.IntervalWindowCoder()


class _ColoredWindow(window.BoundedWindow):

  def __init__(self, end, color):
    super().__init__(end)
    self.color = color

  def __eq__(self, other):
    return self.end == other.end and self.color == other.color

  def __hash__(self):
    return hash((self.end, self.color))


class _ColoredWindowCoder(coders.Coder):
  """A window coder of the pipeline's own, pickled on the wire."""

  def encode(self, w):
    return ("%d:%s" % (w.end.micros, w.color)).encode()

  def decode(self, b):
    end, color = b.decode().split(":")
    return _ColoredWindow(int(end) / 1e6, color)

  def is_deterministic(self):
    return True


class _ColoredWindows(window.NonMergingWindowFn):
  """Windows of a type (and a pickled coder) the runner cannot read."""

  def assign(self, context):
    return [_ColoredWindow(context.timestamp + 10, "red")]

  def get_window_coder(self):
    return _ColoredWindowCoder()


@pytest.mark.parametrize(
    "windowfn,want",
    [
        (_Merging(), "merging window function beam:window_fn:pickled_python:v1 is not supported"),
        (_ColoredWindows(), '("beam:coder:pickled_python:v1") is not supported'),
    ],
    ids=["custom-merging", "custom-window-coder"])
def test_refused_at_submission(server, windowfn, want, tmp_path):
  # The DoFn is pickled to the worker, so it leaves a file, not a list
  # entry, if a bundle runs.
  ran = str(tmp_path / "ran")

  def mark(x):
    open(ran, "a").write("%s\n" % x)
    return x

  with pytest.raises(Exception) as err:
    with beam.Pipeline(options=options(server)) as p:
      (p | beam.Create([1, 2])
       | beam.Map(mark)
       | beam.Map(lambda t: window.TimestampedValue(("k", t), t))
       | "Window" >> beam.WindowInto(windowfn)
       | "Group" >> beam.GroupByKey())
  msg = str(err.value)
  assert "translate: pipeline not supported by weir" in msg, msg
  assert 'transform "Group"' in msg and "beam:transform:group_by_key:v1" in msg, msg
  assert want in msg, msg
  assert not os.path.exists(ran), "the job ran a bundle before it was refused"


def test_streaming_periodic_impulse(server):
  """A streaming Python pipeline (no pre-optimization, a splittable DoFn
  source that checkpoints itself) with fixed windows over its ticks."""
  from apache_beam.transforms.periodicsequence import PeriodicImpulse
  with beam.Pipeline(options=options(server, "--streaming")) as p:
    ticks = p | PeriodicImpulse(start_timestamp=1, stop_timestamp=7,
                                fire_interval=1, apply_windowing=False)
    out = (ticks
           | beam.Map(lambda t: window.TimestampedValue(("k", 1), int(t)))
           | beam.WindowInto(window.FixedWindows(2))
           | beam.CombinePerKey(sum)
           | beam.Map(lambda kv, w=beam.DoFn.WindowParam: (int(w.start), kv[1])))
    assert_that(out, equal_to([(0, 1), (2, 2), (4, 2), (6, 1)]))


def test_teststream_triggers_and_late_data(server):
  """Python's TestStream (beam:transform:teststream:v1) runs natively on
  weir: on-time and late panes of an event-time trigger with allowed
  lateness, accumulating, and an element past the lateness dropped. Python
  declares the closing behavior EMIT_ALWAYS, so when the window expires its
  final pane fires though nothing arrived since the late one: the
  accumulated 7 again, marked last, as Beam's model (Java's ReduceFnRunner,
  which Flink and Dataflow run) has it."""
  from apache_beam.testing.test_stream import TestStream
  from apache_beam.transforms import trigger
  stream = (TestStream()
            .add_elements([window.TimestampedValue(("k", 1), 1),
                           window.TimestampedValue(("k", 2), 2)])
            .advance_watermark_to(10)  # fires [0, 10) on time: 3
            .add_elements([window.TimestampedValue(("k", 4), 4)])  # late: 7
            .advance_watermark_to(30)  # past the lateness of [0, 10): final pane
            .add_elements([window.TimestampedValue(("k", 8), 8)])  # dropped
            .advance_watermark_to_infinity())
  with beam.Pipeline(options=options(server, "--streaming")) as p:
    out = (p
           | stream
           | beam.WindowInto(
               window.FixedWindows(10),
               trigger=trigger.AfterWatermark(late=trigger.AfterCount(1)),
               accumulation_mode=trigger.AccumulationMode.ACCUMULATING,
               allowed_lateness=15)
           | beam.CombinePerKey(sum)
           | beam.Map(lambda kv, pane=beam.DoFn.PaneInfoParam:
                      (kv[1], pane.timing, pane.is_last)))
    from apache_beam.utils.windowed_value import PaneInfoTiming
    assert_that(out, equal_to([(3, PaneInfoTiming.ON_TIME, False),
                               (7, PaneInfoTiming.LATE, False),
                               (7, PaneInfoTiming.LATE, True)]))


def test_teststream_of_strings(server):
  """Python writes TestStream elements in the outer context: a string has
  no length prefix there (translate reads them so, by the SDK's sdk_base)."""
  from apache_beam.testing.test_stream import TestStream
  stream = (TestStream(coder=coders.StrUtf8Coder())
            .add_elements(["a", "bb"])
            .advance_watermark_to(10)
            .add_elements(["ccc"])
            .advance_watermark_to_infinity())
  with beam.Pipeline(options=options(server, "--streaming")) as p:
    out = p | stream | beam.Map(lambda s: (s, len(s)))
    assert_that(out, equal_to([("a", 1), ("bb", 2), ("ccc", 3)]))
