"""Test-only fault points. Each is inert unless the test suite names it in an environment
variable, so that the fault tests exercise the real job (the real Spark retry, the real
SIGKILL) instead of a copy of it:

- ``DISC21SPARK_TEST_FAIL_FIRST_ATTEMPT="<partition>:<marker>"``: the first attempt of
  that task partition raises (after appending its partition to the marker file);
- ``DISC21SPARK_TEST_HOLD_FIRST_ATTEMPT="<partition>:<marker>"``: the first attempt of
  that task partition writes its Python worker's process id to the marker and waits,
  for the test to kill that worker from outside;
- ``DISC21SPARK_TEST_HOLD_AT="<point>:<marker>"``: the driver writes its process id to
  the marker when it reaches ``point`` (a phase name, or ``publish``: between writing the
  output and putting it in place) and waits there, for the test to SIGKILL the job.

The variables reach executors through ``spark.executorEnv.*`` on a cluster."""

from __future__ import annotations

import os
import time

FAIL_FIRST_ATTEMPT = "DISC21SPARK_TEST_FAIL_FIRST_ATTEMPT"
HOLD_FIRST_ATTEMPT = "DISC21SPARK_TEST_HOLD_FIRST_ATTEMPT"
HOLD_AT = "DISC21SPARK_TEST_HOLD_AT"
# long enough for any test to act, short enough that a forgotten hold ends by itself
HOLD_SECONDS = 300


def in_task() -> None:
    """Called at the start of the Python tasks that compute figures."""
    fail, hold = os.environ.get(FAIL_FIRST_ATTEMPT), os.environ.get(HOLD_FIRST_ATTEMPT)
    if not fail and not hold:
        return
    from pyspark import TaskContext

    task = TaskContext.get()
    if task is None or task.attemptNumber() != 0:
        return
    for setting, act in ((fail, _raise), (hold, _hold)):
        partition, _, marker = (setting or "").partition(":")
        if partition and task.partitionId() == int(partition):
            act(marker)


def at(point: str) -> None:
    """Called by the driver at each phase and before publishing its output."""
    setting = os.environ.get(HOLD_AT)
    if setting:
        name, _, marker = setting.partition(":")
        if name == point:
            _hold(marker)


def _raise(marker: str) -> None:
    from pyspark import TaskContext

    partition = TaskContext.get().partitionId()
    with open(marker, "a") as fh:
        fh.write(f"{partition}\n")
    raise RuntimeError(f"injected fault in partition {partition} (test)")


def _hold(marker: str) -> None:
    # a part file of this process's own: the workers of a pool reach a hold together, and
    # one shared part file, moved by the first, failed the second's move (its task ended
    # in an internal error before the test could signal the run). Hidden: a worker stopped
    # between the two steps leaves it beside the test's files
    folder, name = os.path.split(marker)
    part = os.path.join(folder, f".{name}.{os.getpid()}.part")
    with open(part, "w") as fh:
        fh.write(f"{os.getpid()}\n")
    os.replace(part, marker)  # the test never reads half a number
    time.sleep(HOLD_SECONDS)
