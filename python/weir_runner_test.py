"""Beam's Python portable-runner suite against weir.

WeirRunnerTest is Beam's own `PortableRunnerTest` (which inherits the ~150
tests of `FnApiRunnerTest`) with weir's job server started as a subprocess,
the way Beam's prism_runner_test.py starts Prism. The same class runs the
suite against Prism when WEIR_PY_SUITE_SERVER=prism (bin/prism, built by
`make vr-prism` or `make python-vr-prism`), so both are measured by one
suite in one way.

Each skip names its reason. Tests weir is known to fail are listed in
KNOWN_FAILURES with theirs: they run, and are reported as expected
failures (strict: a listed test that passes fails the run, so the list
stays true).
"""

import logging
import os
import unittest

import pytest

import apache_beam as beam
from apache_beam.options.pipeline_options import DebugOptions
from apache_beam.options.pipeline_options import PortableOptions
from apache_beam.options.pipeline_options import StandardOptions
from apache_beam.runners.portability import portable_runner_test
from apache_beam.testing.util import assert_that

import weirtest

_LOGGER = logging.getLogger(__name__)

SERVER = os.environ.get("WEIR_PY_SUITE_SERVER", "weir")
# WEIR_PY_SUITE_STREAMING=1 runs the suite with --streaming: Python then
# skips its pre-optimization (no lifted or packed combines, composites left
# as they are) and marks every PCollection unbounded.
STREAMING = os.environ.get("WEIR_PY_SUITE_STREAMING", "") == "1"

# Skipped on every runner of this suite, with the reason. Beam's
# PortableRunnerTest already skips the drain tests ("Portable runners
# don't support drain yet") and two timer tests (issue 35168).
SKIPS = {}

# Tests that fail on a server, with why. Reported as xfail (strict).
KNOWN_FAILURES = {
    "weir": {
        "test_custom_merging_window":
            "refused at submission: a merging window function of the "
            "pipeline's own (beam:window_fn:pickled_python:v1) would need "
            "the SDK to merge windows for the runner; weir merges sessions "
            "only",
        "test_custom_window_type":
            "refused at submission: windows in a pickled coder "
            "(beam:coder:pickled_python:v1) whose end the runner cannot "
            "read, so it cannot fire them",
    },
    "prism": {
        "test_custom_merging_window":
            "refused at submission: Prism does not implement "
            "WindowingStrategy.MergeStatus NEEDS_MERGE for custom window "
            "functions (Beam issue 31921)",
        "test_custom_window_type":
            "fails when building the stage: Prism has no window coder for a "
            "length-prefixed custom window coder (Beam issue 31921)",
    },
    # With --streaming only, on top of the server's own.
    "prism-streaming": {
        "test_no_subtransform_composite":
            "refused at submission: Prism does not implement a composite "
            "with no parts (PTransform.Spec.Urn "
            "beam:transform:pickled_python:v1), which Python leaves when it "
            "skips pre-optimization",
    },
}


def known_failures():
  """The known failures of this run's server and mode, by test."""
  known = dict(KNOWN_FAILURES.get(SERVER, {}))
  if STREAMING:
    known.update(KNOWN_FAILURES.get(SERVER + "-streaming", {}))
  return known


def _server_command(job_port, expansion_port):
  if SERVER == "prism":
    binary = os.environ.get(
        "WEIR_PRISM_BIN", os.path.join(weirtest.REPO, "bin", "prism"))
    return [binary, "--job_port=%d" % job_port, "--serve_http=false"]
  return [
      weirtest.weir_bin(), "serve",
      "--job-port=%d" % job_port,
      "--expansion-port=%d" % expansion_port,
  ]


class WeirRunnerTest(portable_runner_test.PortableRunnerTest):
  _use_grpc = True
  _use_subprocesses = True

  expansion_port = None

  @classmethod
  def _subprocess_command(cls, job_port, expansion_port):
    cls.expansion_port = expansion_port
    return _server_command(job_port, expansion_port)

  @classmethod
  def get_expansion_service(cls):
    return "localhost:%d" % cls.expansion_port

  def setUp(self):
    name = self._testMethodName
    if name in SKIPS:
      raise unittest.SkipTest(SKIPS[name])
    super().setUp()

  def create_options(self):
    options = super().create_options()
    # LOOPBACK: the SDK worker runs in this process, as in Beam's
    # prism_runner_test; EMBEDDED_PYTHON (the base class's) needs a runner
    # written in Python.
    options.view_as(PortableOptions).environment_type = "LOOPBACK"
    options.view_as(DebugOptions).add_experiment("pre_optimize=default")
    options.view_as(StandardOptions).streaming = STREAMING
    return options

  # Beam's FnApiRunnerTest reads a file on the worker; the same test in
  # prism_runner_test.py reads /etc/profile, which every machine here has.
  def test_read(self):
    with self.create_pipeline() as p:
      lines = p | beam.io.ReadFromText("/etc/profile")
      assert_that(lines, lambda lines: len(lines) > 0)
