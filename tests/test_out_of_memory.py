"""A Spark job that runs out of heap ends with one line naming the setting to raise:
a real JVM of 512 MB asked for a row larger than its heap, under the real runner."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT, cli_env

HOG = """
import sys
from dataclasses import dataclass

from disc21spark.core import runner
from disc21spark.core.session import spark_session


@dataclass
class Hog(runner.BaseJob):
    overwrite: bool = False

    def execute(self, spark):
        # one 600 MB string in a 512 MB heap: a task's OutOfMemoryError
        big = spark.range(1).selectExpr("repeat('x', 200000000) AS s")
        return big.selectExpr("length(concat(s, s, s))").collect()

    def summary(self, result):
        return [str(result)]


def session(profile, master, debug=False):
    return spark_session(profile, master, conf={"spark.driver.memory": "512m"})


sys.exit(runner.run(Hog, profile="local", master="local[1]", session=session))
"""


def test_a_job_out_of_heap_says_which_memory_to_raise():
    env = dict(cli_env(), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", HOG], capture_output=True, text=True, env=env, timeout=300
    )
    errors = [line for line in done.stderr.splitlines() if line.startswith(("error", "internal"))]
    assert done.returncode == 2, done.stderr[-3000:]
    assert errors == [
        "error: Spark ran out of memory (Java heap space); raise spark.driver.memory "
        "(spark-submit --driver-memory; on local[*] every task runs in the driver's heap) "
        "or, on a cluster, spark.executor.memory (--executor-memory)"
    ]
    assert "Traceback" not in done.stderr


def test_a_jvm_that_ended_with_sparks_out_of_memory_status_is_named(monkeypatch):
    from py4j.protocol import Py4JNetworkError

    from disc21spark.core import gateway, runner

    # the gateway's process as gateway.own_group records it: here one that exits 52
    ended = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(52)"])
    monkeypatch.setattr(gateway, "_LAUNCHED", [ended])
    gone = Py4JNetworkError("Answer from Java side is empty")
    line = runner.out_of_memory_line(gone)
    assert line is not None and line.startswith(
        "Spark ran out of memory (the JVM ended with Spark's out-of-memory status 52)"
    )
    # a call the exiting JVM left unanswered (py4j's bare Py4JError) is named alike
    from py4j.protocol import Py4JError

    unanswered = Py4JError("An error occurred while calling o1624.collectToPython")
    assert runner.out_of_memory_line(unanswered) == line
    # a JVM that ended otherwise, or an error that is not a lost JVM: not this line
    monkeypatch.setattr(gateway, "_LAUNCHED", [subprocess.Popen([sys.executable, "-c", "0"])])
    assert runner.out_of_memory_line(gone) is None
    monkeypatch.setattr(gateway, "_LAUNCHED", [ended])
    assert runner.out_of_memory_line(RuntimeError("boom")) is None
    monkeypatch.setattr(gateway, "_LAUNCHED", [])
    assert gateway.exit_status() is None and runner.out_of_memory_line(gone) is None
