"""`make run-python`: runs pipelines/python/wordcount.py on a weir job
server twice, with a LOOPBACK worker (in this process) and with an EXTERNAL
worker pool (Beam's worker_pool_main in a process of its own)."""

import os
import subprocess
import sys

import weirtest

WORDCOUNT = os.path.join(weirtest.REPO, "pipelines", "python", "wordcount.py")


def main():
  server = weirtest.Server()
  pool = None
  try:
    base = [sys.executable, WORDCOUNT, "--runner=PortableRunner",
            "--job_endpoint=" + server.endpoint]
    print("== LOOPBACK: the SDK worker runs in the submitting process", flush=True)
    subprocess.run(base + ["--environment_type=LOOPBACK"], check=True)

    port = weirtest.free_port()
    # The pool starts each worker as "python" from its PATH: put this
    # virtual environment's first, as activating it would.
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    pool = subprocess.Popen([sys.executable, "-m",
                             "apache_beam.runners.worker.worker_pool_main",
                             "--service_port=%d" % port], env=env)
    weirtest.wait_for_port(port, pool, "the worker pool")
    print("== EXTERNAL: SDK workers in a worker pool on localhost:%d" % port, flush=True)
    subprocess.run(base + ["--environment_type=EXTERNAL",
                           "--environment_config=localhost:%d" % port], check=True)
  except subprocess.CalledProcessError:
    print(server.log(), file=sys.stderr)
    raise
  finally:
    if pool is not None:
      pool.terminate()
      pool.wait()
    server.stop()


if __name__ == "__main__":
  main()
