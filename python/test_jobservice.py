"""What Beam's Python client needs from weir's job service.

Each test runs Python pipelines with the PortableRunner against a real
`weir serve` (weirtest.Server), in LOOPBACK: the SDK workers run in this
process, so DoFns here can write to local files the test reads.
"""

import glob
import os
import tempfile
import time
import uuid

import grpc
import pytest

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.io.restriction_trackers import OffsetRange
from apache_beam.io.restriction_trackers import OffsetRestrictionTracker
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.portability.api import beam_job_api_pb2_grpc
from apache_beam.runners.portability import portable_runner
from apache_beam.runners.runner import PipelineState
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec
from apache_beam.utils.timestamp import Duration
from apache_beam.utils.timestamp import Timestamp

import weirtest


@pytest.fixture
def server():
  s = weirtest.Server()
  yield s
  s.stop()


options = weirtest.pipeline_options


def job_service(server):
  return beam_job_api_pb2_grpc.JobServiceStub(grpc.insecure_channel(server.endpoint))


def wait_for(what, cond, timeout=30):
  """Polls cond until it holds; these tests run real processes."""
  deadline = time.time() + timeout
  while time.time() < deadline:
    got = cond()
    if got:
      return got
    time.sleep(0.1)
  raise AssertionError("timed out waiting for " + what)


def counter(result, name):
  [c] = result.metrics().query(MetricsFilter().with_name(name))["counters"]
  return c


# An unbounded source: 0, 1, 2, ... five at a time every 50 ms, from one
# restriction the SDK checkpoints itself (defer_remainder), as
# PeriodicImpulse does.
class _Ticks(RestrictionProvider):
  def initial_restriction(self, element):
    return OffsetRange(0, 1 << 40)

  def create_tracker(self, restriction):
    return OffsetRestrictionTracker(restriction)

  def restriction_size(self, element, restriction):
    return restriction.size()

  def truncate(self, element, restriction):
    return None  # a drain ends the source at once


class Tick(beam.DoFn):
  @beam.DoFn.unbounded_per_element()
  def process(
      self,
      element,
      tracker=beam.DoFn.RestrictionParam(_Ticks()),
      wm=beam.DoFn.WatermarkEstimatorParam(ManualWatermarkEstimator.default_provider())):
    start = tracker.current_restriction().start
    for i in range(start, start + 5):
      if not tracker.try_claim(i):
        return
      wm.set_watermark(Timestamp(i))
      yield beam.window.TimestampedValue(i, Timestamp(i))
    tracker.defer_remainder(Duration.of(0.05))


class CountTo(beam.DoFn):
  """Counts the ticks in keyed state and appends "tick count" to a file."""
  N = ReadModifyWriteStateSpec("n", VarIntCoder())

  def __init__(self, path):
    self.path = path

  def process(self, kv, n=beam.DoFn.StateParam(N)):
    c = (n.read() or 0) + 1
    n.write(c)
    with open(self.path, "a") as f:
      f.write("%d %d\n" % (kv[1], c))
    yield c


def ticks_counted(p, path):
  return (p | beam.Impulse() | beam.ParDo(Tick())
          | beam.Map(lambda t: ("k", t)) | beam.ParDo(CountTo(path)))


def lines(path):
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return [tuple(map(int, l.split())) for l in f.read().splitlines() if l.strip()]


def test_described_options_parse_in_python(server):
  """DescribePipelineOptions lists weir's options, so Python keeps
  --weir_... flags, with `=false` on a boolean, and sends them."""
  names = {o.name for o in job_service(server).DescribePipelineOptions(
      beam_job_api_pb2.DescribePipelineOptionsRequest()).options}
  assert {"weir_checkpoint_interval", "weir_combine_lifting", "weir_max_bundle_elements",
          "weir_dead_letter", "weir_savepoint"} <= names
  handle = portable_runner.JobServiceHandle(
      job_service(server),
      options(server, "--weir_checkpoint_interval=10s", "--weir_combine_lifting=false",
              "--weir_max_bundle_elements=3"))
  sent = handle.get_pipeline_options()
  assert sent["beam:option:weir_checkpoint_interval:v1"] == "10s"
  assert sent["beam:option:weir_combine_lifting:v1"] == "false"
  assert sent["beam:option:weir_max_bundle_elements:v1"] == "3"
  # An option not given is not sent, so it cannot override a server default.
  assert "beam:option:weir_adaptive_precombine:v1" not in sent


class BundleSizes(beam.DoFn):
  def __init__(self):
    self.sizes = Metrics.distribution("weirtest", "bundle_size")

  def start_bundle(self):
    self.n = 0

  def process(self, kv):
    self.n += 1
    yield kv

  def finish_bundle(self):
    self.sizes.update(self.n)


def run_grouped(server, *args):
  p = beam.Pipeline(options=options(server, *args))
  _ = (p | beam.Create([(i, i) for i in range(12)]) | beam.GroupByKey()
       | beam.ParDo(BundleSizes()) | beam.Map(lambda kv: (kv[0] % 2, kv[0]))
       | beam.CombinePerKey(sum))
  result = p.run()
  result.wait_until_finish()
  return result


def test_options_reach_runner(server):
  """--weir_max_bundle_elements bounds the bundles Python sees;
  --weir_combine_lifting=false leaves no combine precombining.

  A batch PortableRunner lifts combines itself before it submits
  (its pre_optimize phases); pre_optimize=none leaves them to weir."""
  bounded = run_grouped(server, "--weir_max_bundle_elements=3", "--weir_combine_lifting=false",
                        "--experiments=pre_optimize=none")
  [sizes] = bounded.metrics().query(MetricsFilter().with_name("bundle_size"))["distributions"]
  assert sizes.committed.sum == 12
  assert sizes.committed.max <= 3 and sizes.committed.count >= 4
  precombined = MetricsFilter().with_namespace("weir").with_name("precombined_bundles")
  assert bounded.metrics().query(precombined)["counters"] == []

  lifted = run_grouped(server, "--experiments=pre_optimize=none")
  assert [c.committed for c in lifted.metrics().query(precombined)["counters"]] != []


def test_bad_option_fails_submission(server):
  p = beam.Pipeline(options=options(server, "--weir_max_bundle_elements=0"))
  _ = p | beam.Create([1]) | beam.Map(lambda x: x)
  with pytest.raises(grpc.RpcError) as e:
    p.run()
  assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
  assert 'option --weir_max_bundle_elements="0": want a positive whole number' in e.value.details()


class Counted(beam.DoFn):
  def __init__(self):
    self.elems = Metrics.counter("weirtest", "elems")

  def process(self, x):
    self.elems.inc()
    yield x


def test_metrics_attempted_and_committed(server):
  p = beam.Pipeline(options=options(server))
  _ = p | beam.Create(list(range(10))) | beam.ParDo(Counted())
  result = p.run()
  result.wait_until_finish()
  assert result.state == PipelineState.DONE
  c = counter(result, "elems")
  assert (c.committed, c.attempted) == (10, 10)
  assert c.key.step  # attributed to its transform


def test_cancel_streaming_job(server):
  out = os.path.join(tempfile.mkdtemp(), "ticks")
  p = beam.Pipeline(options=options(server, "--streaming"))
  ticks_counted(p, out)
  result = p.run()
  wait_for("ticks", lambda: len(lines(out)) > 10)
  result.cancel()
  with pytest.raises(RuntimeError):  # Python calls any end but DONE a failure
    result.wait_until_finish()
  assert result.state == PipelineState.CANCELLED


def test_drain_streaming_job(server):
  """Python has no drain call; the job service's Drain ends the job
  DRAINED: the source's restriction is truncated, the watermark goes to
  the end of time."""
  out = os.path.join(tempfile.mkdtemp(), "ticks")
  p = beam.Pipeline(options=options(server, "--streaming"))
  ticks_counted(p, out)
  result = p.run()
  wait_for("ticks", lambda: len(lines(out)) > 10)
  resp = job_service(server).Drain(beam_job_api_pb2.DrainJobRequest(job_id=result._job_id))
  assert resp.state in (beam_job_api_pb2.JobState.DRAINING, beam_job_api_pb2.JobState.DRAINED)
  with pytest.raises(RuntimeError):
    result.wait_until_finish()
  assert result.state == PipelineState.DRAINED


def job_messages(server, job_id, timeout=10):
  """The job's messages so far (the stream stays open while it runs)."""
  got = []
  try:
    for m in job_service(server).GetMessageStream(
        beam_job_api_pb2.JobMessagesRequest(job_id=job_id), timeout=timeout):
      if m.HasField("message_response"):
        got.append(m.message_response.message_text)
  except grpc.RpcError as e:
    if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
      raise
  return got


# The first run's LOOPBACK workers lose their server mid-bundle.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_checkpoint_resume_after_kill():
  """A streaming Python job with --weir_checkpoint_interval, its server
  killed, submitted again under its --job_name to a new server on the same
  state dir, resumes from its checkpoint: its count and its source go on
  from there rather than from scratch."""
  state_dir = tempfile.mkdtemp(prefix="weir-state-")
  name = "ticks-" + uuid.uuid4().hex[:8]
  work = tempfile.mkdtemp()
  first, second = os.path.join(work, "first"), os.path.join(work, "second")
  checkpoints = os.path.join(state_dir, "jobs", name, "checkpoints")
  args = ["--streaming", "--job_name=" + name, "--weir_checkpoint_interval=1s"]

  s1 = weirtest.Server(state_dir=state_dir)
  try:
    p = beam.Pipeline(options=options(s1, *args))
    ticks_counted(p, first)
    p.run()
    # Two completed checkpoints: the second covers counting already done.
    wait_for("two checkpoints", lambda: len(glob.glob(os.path.join(checkpoints, "chk-*[0-9]"))) >= 2)
    s1.kill()  # as a crash: nothing is flushed or stopped
  finally:
    s1.stop()
  before = lines(first)
  assert before and before[-1][1] > 1

  s2 = weirtest.Server(state_dir=state_dir)
  try:
    p = beam.Pipeline(options=options(s2, *args))
    ticks_counted(p, second)
    result = p.run()
    wait_for("ticks after restore", lambda: len(lines(second)) > 5)
    assert any(m.startswith("restored from checkpoint") for m in job_messages(s2, result._job_id, timeout=3))
    tick, count = lines(second)[0]
    print("first run counted to %d; the restored run starts at tick %d, count %d" % (before[-1][1], tick, count))
    # From scratch it would be tick 0, count 1. Restored, the count goes on
    # from the checkpoint's (at most what the first run had counted, since
    # the first run went on after its last checkpoint), and so does the
    # source, one count per tick.
    assert tick > 0 and count > 1, (tick, count)
    assert count <= before[-1][1] + 1
    assert count == tick + 1
    result.cancel()
  finally:
    s2.stop()
