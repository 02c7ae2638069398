"""Python's Kafka transforms on weir, without Java.

apache_beam.io.kafka's ReadFromKafka and WriteToKafka expand through
weir's expansion service (`weir serve --expansion-port`) into weir's
native Kafka read and write, and run against kfake. See
docs/kafka-expansion.md.
"""

import uuid

import apache_beam as beam
import pytest
from apache_beam.io.kafka import ReadFromKafka
from apache_beam.io.kafka import WriteToKafka
from apache_beam.testing.util import assert_that
from apache_beam.testing.util import equal_to

import weirtest

N = 20
RECORDS = [(b"k%02d" % i, b"v%02d" % i) for i in range(N)]


@pytest.fixture(scope="module")
def server():
  s = weirtest.Server(expansion=True)
  yield s
  s.stop()


@pytest.fixture(scope="module")
def kfake():
  k = weirtest.Kfake(partitions=1)
  yield k
  k.stop()


options = weirtest.pipeline_options


def write(server, kfake, topic):
  """Writes RECORDS to topic with WriteToKafka, through weir."""
  with beam.Pipeline(options=options(server)) as p:
    _ = (
        p
        # No reshuffle: it would add a group-by-key the records need not.
        | beam.Create(RECORDS, reshuffle=False).with_output_types(
            tuple[bytes, bytes])
        | WriteToKafka(
            producer_config={"bootstrap.servers": kfake.bootstrap},
            topic=topic,
            expansion_service=server.expansion_address))


def read(server, kfake, topic, check, **kwargs):
  """Reads N records of topic with ReadFromKafka and checks them."""
  config = {"bootstrap.servers": kfake.bootstrap, "auto.offset.reset": "earliest"}
  config.update(kwargs.pop("consumer_config", {}))
  with beam.Pipeline(options=options(server)) as p:
    recs = p | ReadFromKafka(
        consumer_config=config,
        topics=[topic],
        max_num_records=N,
        expansion_service=server.expansion_address,
        **kwargs)
    check(recs)


@pytest.fixture(scope="module")
def topic(server, kfake):
  """A topic holding RECORDS, written by a Python pipeline on weir."""
  t = "py-" + uuid.uuid4().hex[:8]
  write(server, kfake, t)
  return t


def test_round_trip(server, kfake, topic):
  read(server, kfake, topic,
       lambda recs: assert_that(recs, equal_to(RECORDS)))


def test_with_metadata(server, kfake, topic):
  def check(rows):
    got = rows | beam.Map(lambda r: (
        r.topic, r.partition, r.offset, r.key, r.value,
        r.timestampTypeId, r.timestampTypeName, len(r.headers),
        r.timestamp > 0))
    # One partition: offsets in the order written.
    want = [(topic, 0, i, k, v, 0, "CreateTime", 0, True)
            for i, (k, v) in enumerate(RECORDS)]
    assert_that(got, equal_to(want))

  read(server, kfake, topic, check, with_metadata=True)


def test_commit_offset_in_finalize(server, kfake, topic):
  group = "g-" + uuid.uuid4().hex[:8]
  assert kfake.committed(group) == {}
  read(server, kfake, topic,
       lambda recs: assert_that(recs, equal_to(RECORDS)),
       consumer_config={"group.id": group},
       commit_offset_in_finalize=True)
  # The bounded read committed where it ended, once the job finished.
  assert kfake.committed(group) == {topic: {0: N}}


@pytest.mark.parametrize("kwargs, field", [
    ({"dynamic_read_poll_interval_seconds": 5},
     "dynamic_read_poll_interval_seconds"),
    ({"consumer_factory_fn_class": "org.example.Factory",
      "consumer_factory_fn_params": {"a": "b"}}, "consumer_factory_fn_class"),
    ({"key_deserializer":
      "org.apache.kafka.common.serialization.LongDeserializer"},
     "key_deserializer"),
    ({"commit_offset_in_finalize": True}, "group.id"),
])
def test_read_refused_at_expansion(server, kfake, kwargs, field):
  p = beam.Pipeline(options=options(server))
  with pytest.raises(Exception) as e:
    _ = p | ReadFromKafka(
        consumer_config={"bootstrap.servers": kfake.bootstrap},
        topics=["t"],
        expansion_service=server.expansion_address,
        **kwargs)
  assert field in str(e.value)
  assert "weir expansion service" in str(e.value)


def test_write_with_headers_refused(server, kfake):
  p = beam.Pipeline(options=options(server))
  rows = p | beam.Create([beam.Row(key=b"k", value=b"v")])
  with pytest.raises(Exception) as e:
    _ = rows | WriteToKafka(
        producer_config={"bootstrap.servers": kfake.bootstrap},
        topic="t", with_headers=True,
        expansion_service=server.expansion_address)
  assert "kafka_write_with_headers" in str(e.value)
  assert "not supported" in str(e.value)


def test_source_parallelism():
  """--weir_source_parallelism spreads a ReadFromKafka, which has no
  parallelism of its own, over that many subtasks, and reads every record
  once."""
  import json
  import urllib.request
  http_port = weirtest.free_port()
  srv = weirtest.Server("--http-addr=127.0.0.1:%d" % http_port, expansion=True)
  k = weirtest.Kfake(partitions=4)
  try:
    t = "py-par-" + uuid.uuid4().hex[:8]
    write(srv, k, t)
    config = {"bootstrap.servers": k.bootstrap, "auto.offset.reset": "earliest"}
    with beam.Pipeline(options=options(srv, "--weir_source_parallelism=2")) as p:
      recs = p | ReadFromKafka(
          consumer_config=config, topics=[t], max_num_records=N,
          expansion_service=srv.expansion_address)
      assert_that(recs, equal_to(RECORDS))

    def get(path):
      with urllib.request.urlopen("http://127.0.0.1:%d%s" % (http_port, path)) as r:
        return json.load(r)

    jobs = get("/api/jobs")
    last = max(jobs, key=lambda j: j["start"])
    stages = get("/api/jobs/%s" % last["id"])["stages"]
    reads = [s for s in stages if "ReadFromKafka" in s["name"]]
    assert [s["parallelism"] for s in reads] == [2], stages
    assert sum(s["elementsOut"] for s in reads) == N, reads
  finally:
    k.stop()
    srv.stop()
