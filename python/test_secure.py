"""Beam's Python client against a `weir serve` that requires TLS, a client
certificate and a bearer token (docs/security.md).

Python's PortableRunner dials the job service and the artifact staging
service with grpc.insecure_channel and sends no token, so it cannot reach
such a server itself: it goes through `weir proxy`, which listens on
loopback and forwards with the proxy's certificate and token.
"""

import os
import tempfile

import grpc
import pytest

import apache_beam as beam
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.portability import job_server
from apache_beam.testing.util import assert_that
from apache_beam.testing.util import equal_to

import weirtest

TOKEN = "python-test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def secured():
  folder = tempfile.mkdtemp(prefix="weir-certs-")
  certs = weirtest.write_certs(folder)
  token_file = os.path.join(folder, "token")
  with open(token_file, "w") as f:
    f.write("# the test's token\n%s\n" % TOKEN)
  server = weirtest.Server(
      "--tls-cert=" + certs["server"], "--tls-key=" + certs["server_key"],
      "--tls-client-ca=" + certs["ca"], "--auth-token-file=" + token_file)
  try:
    proxy = weirtest.Proxy(
        server.endpoint, "--tls-ca=" + certs["ca"], "--tls-cert=" + certs["client"],
        "--tls-key=" + certs["client_key"], "--token-file=" + token_file)
  except Exception:
    server.stop()
    raise
  yield server, proxy
  proxy.stop()
  server.stop()


def squares(p):
  return p | beam.Create([1, 2, 3, 4]) | beam.Map(lambda x: x * x)


def test_pipeline_through_proxy(secured):
  _, proxy = secured
  with beam.Pipeline(options=weirtest.pipeline_options(proxy)) as p:
    assert_that(squares(p), equal_to([1, 4, 9, 16]))
  # The job ran on the secured server, whose job list only the proxy's
  # credentials can read: the PortableRunner's own client, through it.
  jobs = job_server.ExternalJobServer(proxy.endpoint, timeout=10).start()
  states = [j.state for j in jobs.GetJobs(beam_job_api_pb2.GetJobsRequest()).job_info]
  assert beam_job_api_pb2.JobState.DONE in states, states


def test_portable_runner_cannot_reach_secured_server(secured):
  """The client the PortableRunner dials a --job_endpoint with
  (job_server.ExternalJobServer: grpc.insecure_channel, no credentials)
  never gets a ready channel to a TLS server."""
  server, _ = secured
  with pytest.raises(grpc.FutureTimeoutError):
    job_server.ExternalJobServer(server.endpoint, timeout=1).start()
