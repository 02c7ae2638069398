"""weir's PostgreSQL sink from Python.

A Python pipeline reaches weir's native PostgreSQL write through weir's
expansion service (`weir serve --expansion-port`): an ExternalTransform of
beam:transform:weir:postgres_write:v1 whose payload names the connection,
the table and the mode, over a PCollection of schema rows (a NamedTuple
with RowCoder). The server is the one `make postgres` starts
(internal/tools/postgres.sh), found through WEIR_PG_URL; see
docs/connectors.md.
"""

import os
import subprocess
import typing
import uuid

import apache_beam as beam
import pytest
from apache_beam.transforms.external import ExternalTransform
from apache_beam.transforms.external import ImplicitSchemaPayloadBuilder

import weirtest

URN = "beam:transform:weir:postgres_write:v1"


class Total(typing.NamedTuple):
  key: str
  total: int
  ratio: typing.Optional[float]


beam.coders.registry.register_coder(Total, beam.coders.RowCoder)


@pytest.fixture(scope="module")
def pg_url():
  url = os.environ.get("WEIR_PG_URL", "")
  if url:
    return url
  how = "start one with `make postgres` and set WEIR_PG_URL to the URL it prints"
  if os.environ.get("WEIR_REQUIRE_POSTGRES") == "1":
    pytest.fail("no PostgreSQL: WEIR_PG_URL is unset; " + how)
  pytest.skip("no PostgreSQL: WEIR_PG_URL is unset; " + how)


@pytest.fixture(scope="module")
def server():
  s = weirtest.Server(expansion=True)
  yield s
  s.stop()


def psql(url, sql):
  """Runs sql with psql and returns its rows, fields split on '|'."""
  out = subprocess.run(["psql", url, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       check=True, capture_output=True, text=True).stdout
  return [line.split("|") for line in out.splitlines() if line]


@pytest.fixture
def table(pg_url):
  name = "py_" + uuid.uuid4().hex[:8]
  psql(pg_url, "CREATE TABLE %s (key text PRIMARY KEY, total bigint, ratio double precision)" % name)
  yield name
  psql(pg_url, "DROP TABLE %s" % name)


def write(server, pg_url, rows, **config):
  with beam.Pipeline(options=weirtest.pipeline_options(server)) as p:
    _ = (
        p
        | beam.Create(rows, reshuffle=False).with_output_types(Total)
        | ExternalTransform(URN, ImplicitSchemaPayloadBuilder(dict(connection=pg_url, **config)),
                            server.expansion_address))


def test_insert(server, pg_url, table):
  write(server, pg_url, [Total("a", 1, 0.5), Total("b", 2, None)], table=table)
  assert psql(pg_url, "SELECT key, total, ratio FROM %s ORDER BY key" % table) == [
      ["a", "1", "0.5"], ["b", "2", ""]]


def test_upsert(server, pg_url, table):
  psql(pg_url, "INSERT INTO %s VALUES ('a', 100, NULL), ('z', 26, NULL)" % table)
  write(server, pg_url, [Total("a", 1, None), Total("b", 2, 0.25)], table=table, mode="upsert", key=["key"])
  assert psql(pg_url, "SELECT key, total FROM %s ORDER BY key" % table) == [
      ["a", "1"], ["b", "2"], ["z", "26"]]


def test_refused_at_expansion(server, pg_url):
  with pytest.raises(Exception, match="key column \"nope\" is not written"):
    write(server, pg_url, [Total("a", 1, None)], table="t", mode="upsert", key=["nope"])
