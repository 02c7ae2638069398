"""Starts weir's job server (and kfake) for the Python tests.

weir's Python tests run Beam's Python SDK against a real `weir serve`
process, as Beam's own prism_runner_test.py does against Prism. The binary
is WEIR_BIN, or bin/weir of this repository (`make build` makes it).
"""

import json
import os
import re
import socket
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def weir_bin():
  return os.environ.get("WEIR_BIN", os.path.join(REPO, "bin", "weir"))


def free_port():
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def wait_for_port(port, proc, what, timeout=60):
  deadline = time.time() + timeout
  while time.time() < deadline:
    if proc.poll() is not None:
      raise RuntimeError("%s exited with %s before listening" % (what, proc.returncode))
    try:
      with socket.create_connection(("localhost", port), timeout=1):
        return
    except OSError:
      time.sleep(0.1)
  raise RuntimeError("%s did not listen on port %d within %ds" % (what, port, timeout))


class Server:
  """A `weir serve` process on free ports; stop() ends it.

  args are extra flags for `weir serve`. The server's log goes to a file
  (self.log_path) so a failing test can show it.
  """

  def __init__(self, *args, expansion=False, state_dir=None):
    self.job_port = free_port()
    self.expansion_port = free_port() if expansion else -1
    self.state_dir = state_dir or tempfile.mkdtemp(prefix="weir-state-")
    fd, self.log_path = tempfile.mkstemp(prefix="weir-serve-", suffix=".log")
    self._log = os.fdopen(fd, "w")
    cmd = [
        weir_bin(), "serve",
        "--job-port=%d" % self.job_port,
        "--expansion-port=%d" % self.expansion_port,
        "--state-dir=%s" % self.state_dir,
    ] + list(args)
    self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
    try:
      wait_for_port(self.job_port, self.proc, "weir serve")
      if expansion:
        wait_for_port(self.expansion_port, self.proc, "weir's expansion service")
    except Exception:
      self.stop()
      raise

  @property
  def endpoint(self):
    return "localhost:%d" % self.job_port

  @property
  def expansion_address(self):
    return "localhost:%d" % self.expansion_port

  def log(self):
    self._log.flush()
    with open(self.log_path) as f:
      return f.read()

  def kill(self):
    """Ends the server at once, as a crash would."""
    self.proc.kill()
    self.proc.wait()

  def stop(self):
    if self.proc.poll() is None:
      self.proc.terminate()
      try:
        self.proc.wait(timeout=30)
      except subprocess.TimeoutExpired:
        self.proc.kill()
        self.proc.wait()
    self._log.close()


def write_certs(folder):
  """Writes a fresh test CA, server and client certificates into folder
  with bin/testcerts (internal/tools/testcerts) and returns their paths by
  name: ca, server, server_key, client, client_key."""
  binary = os.environ.get("WEIR_TESTCERTS_BIN", os.path.join(REPO, "bin", "testcerts"))
  subprocess.run([binary, folder], check=True, timeout=60)
  names = {"ca": "ca.pem", "server": "server.pem", "server_key": "server-key.pem",
           "client": "client.pem", "client_key": "client-key.pem"}
  return {k: os.path.join(folder, v) for k, v in names.items()}


class Proxy:
  """A `weir proxy` process on a free loopback port, forwarding to
  endpoint with the flags in args; stop() ends it."""

  def __init__(self, endpoint, *args):
    self.port = free_port()
    fd, self.log_path = tempfile.mkstemp(prefix="weir-proxy-", suffix=".log")
    self._log = os.fdopen(fd, "w")
    cmd = [weir_bin(), "proxy", "--listen=localhost:%d" % self.port,
           "--endpoint=" + endpoint] + list(args)
    self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
    try:
      wait_for_port(self.port, self.proc, "weir proxy")
    except Exception:
      self.stop()
      raise

  @property
  def endpoint(self):
    return "localhost:%d" % self.port

  def log(self):
    self._log.flush()
    with open(self.log_path) as f:
      return f.read()

  def stop(self):
    if self.proc.poll() is None:
      self.proc.terminate()
      self.proc.wait(timeout=30)
    self._log.close()


def pipeline_options(server, *args):
  """Beam pipeline options that submit to server with a LOOPBACK worker."""
  from apache_beam.options.pipeline_options import PipelineOptions
  return PipelineOptions([
      "--runner=PortableRunner",
      "--job_endpoint=" + server.endpoint,
      "--environment_type=LOOPBACK",
  ] + list(args))


class Kfake:
  """franz-go's in-memory Kafka broker (internal/tools/kfake) on a free port."""

  def __init__(self, partitions=1):
    self.port = free_port()
    binary = os.environ.get("WEIR_KFAKE_BIN", os.path.join(REPO, "bin", "kfake"))
    self.proc = subprocess.Popen(
        [binary, "--port=%d" % self.port, "--partitions=%d" % partitions],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
      wait_for_port(self.port, self.proc, "kfake")
    except Exception:
      self.stop()
      raise

  @property
  def bootstrap(self):
    return "127.0.0.1:%d" % self.port

  def committed(self, group):
    """The group's committed offsets, {topic: {partition: offset}}, read
    with bin/kafkaoffsets (internal/tools/kafkaoffsets)."""
    binary = os.environ.get(
        "WEIR_KAFKAOFFSETS_BIN", os.path.join(REPO, "bin", "kafkaoffsets"))
    out = subprocess.run(
        [binary, "--bootstrap=" + self.bootstrap, "--group=" + group],
        check=True, capture_output=True, text=True, timeout=60).stdout
    return {t: {int(p): o for p, o in ps.items()}
            for t, ps in json.loads(out).items()}

  def stop(self):
    if self.proc.poll() is None:
      self.proc.terminate()
      self.proc.wait(timeout=30)
