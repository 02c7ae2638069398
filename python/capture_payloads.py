"""Writes the expansion payloads Beam's Python SDK sends for ReadFromKafka
and WriteToKafka to expansion/testdata/python/, the seeds of the Go tests
of their decoding (expansion/python_test.go).

Run it with the venv of venv.sh when the Beam version changes:

  "$(./venv.sh)" capture_payloads.py

Each file holds the transform's URN on its first line and the payload
(an ExternalConfigurationPayload) in hex on its second. Nothing here
contacts an expansion service: the payload is built when the transform is.
"""

import os

from apache_beam.io.kafka import ReadFromKafka
from apache_beam.io.kafka import WriteToKafka

OUT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "expansion", "testdata", "python")
SERVERS = "127.0.0.1:9092"
ADDR = "localhost:1"  # never dialled


def cases():
  yield "read_defaults", ReadFromKafka(
      consumer_config={"bootstrap.servers": SERVERS},
      topics=["t"], expansion_service=ADDR)
  yield "read_bounded", ReadFromKafka(
      consumer_config={"bootstrap.servers": SERVERS,
                       "auto.offset.reset": "earliest"},
      topics=["t1", "t2"], max_num_records=10, expansion_service=ADDR)
  yield "read_metadata_commit", ReadFromKafka(
      consumer_config={"bootstrap.servers": SERVERS, "group.id": "g"},
      topics=["t"], commit_offset_in_finalize=True, with_metadata=True,
      start_read_time=5, max_read_time=3, timestamp_policy="CreateTime",
      consumer_polling_timeout=7, redistribute=True,
      redistribute_num_keys=4, allow_duplicates=True,
      expansion_service=ADDR)
  yield "read_dynamic", ReadFromKafka(
      consumer_config={"bootstrap.servers": SERVERS}, topics=["t"],
      dynamic_read_poll_interval_seconds=5, expansion_service=ADDR)
  yield "read_consumer_factory", ReadFromKafka(
      consumer_config={"bootstrap.servers": SERVERS}, topics=["t"],
      consumer_factory_fn_class="org.example.KerberosConsumerFactoryFn",
      consumer_factory_fn_params={"krb5Location": "gs://b/krb5.conf"},
      expansion_service=ADDR)
  yield "read_long_deserializer", ReadFromKafka(
      consumer_config={"bootstrap.servers": SERVERS}, topics=["t"],
      key_deserializer="org.apache.kafka.common.serialization.LongDeserializer",
      expansion_service=ADDR)
  yield "write", WriteToKafka(
      producer_config={"bootstrap.servers": SERVERS}, topic="t",
      expansion_service=ADDR)
  yield "write_with_headers", WriteToKafka(
      producer_config={"bootstrap.servers": SERVERS}, topic="t",
      with_headers=True, expansion_service=ADDR)


def main():
  os.makedirs(OUT, exist_ok=True)
  for name, t in cases():
    payload = t._payload
    if not isinstance(payload, bytes):
      payload = payload.payload()
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
      f.write("%s\n%s\n" % (t._urn, payload.hex()))


if __name__ == "__main__":
  main()
