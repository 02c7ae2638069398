"""pytest configuration of weir's Python tests (see weirtest.py)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest


def pytest_collection_modifyitems(config, items):
  """Marks the suite's known failures xfail(strict): they run, and one that
  starts passing fails the run until its entry is removed."""
  try:
    import weir_runner_test as suite
  except ImportError:
    return
  known = suite.known_failures()
  for item in items:
    reason = known.get(item.name)
    if reason and item.module is suite:
      item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
