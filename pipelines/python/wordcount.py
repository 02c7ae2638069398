"""Counts the words of a small text (or of --input) on any Beam runner,
writes the most frequent ones to --output and prints them: weir's Python
example.

  python -m apache_beam.runners.worker.worker_pool_main --service_port=50000 &
  weir serve &
  python pipelines/python/wordcount.py --runner=PortableRunner \\
      --job_endpoint=localhost:8099 --environment_type=LOOPBACK

With --environment_type=EXTERNAL --environment_config=localhost:50000 the
SDK workers run in that worker pool instead of this process.
"""

import argparse
import glob
import os
import re
import sys
import tempfile

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

TEXT = """It was the best of times, it was the worst of times,
it was the age of wisdom, it was the age of foolishness,
it was the epoch of belief, it was the epoch of incredulity,
it was the season of Light, it was the season of Darkness,
it was the spring of hope, it was the winter of despair."""


def run(argv=None):
  parser = argparse.ArgumentParser()
  parser.add_argument("--input", help="a text file to count (default: a short embedded text)")
  parser.add_argument("--top", type=int, default=5, help="how many words to print")
  parser.add_argument("--output", help="prefix of the output files (default: a temporary folder)")
  args, beam_args = parser.parse_known_args(argv)
  output = args.output or os.path.join(tempfile.mkdtemp(prefix="wordcount-"), "counts")
  with beam.Pipeline(options=PipelineOptions(beam_args)) as p:
    lines = (p | beam.io.ReadFromText(args.input) if args.input
             else p | beam.Create(TEXT.splitlines()))
    (lines
     | "Words" >> beam.FlatMap(lambda line: re.findall(r"[a-zA-Z']+", line.lower()))
     | "Count" >> beam.combiners.Count.PerElement()
     | "Top" >> beam.combiners.Top.Of(args.top, key=lambda kv: (kv[1], kv[0]))
     | "Format" >> beam.FlatMap(lambda top: ["%s: %d" % kv for kv in top])
     | "Write" >> beam.io.WriteToText(output))
  # The workers wrote the counts (in this process with LOOPBACK, in the
  # pool's with EXTERNAL); the submitting process prints them.
  lines = []
  for shard in sorted(glob.glob(output + "*")):
    with open(shard) as f:
      lines += f.read().splitlines()
  print("\n".join(lines))
  return lines


if __name__ == "__main__":
  run(sys.argv[1:])
