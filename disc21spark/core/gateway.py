"""The JVM PySpark launches for a driver run with plain ``python``, gone whenever the
driver exits, its start-up included.

Once PySpark's gateway runs, the JVM reads its stdin and exits at end of file, that is
when the driver's process ends, however it ends (its Python workers follow: their daemon
reads the JVM's pipe the same way). During the seconds before, it does not: a driver
stopped then (a scheduler's SIGTERM 1.5 s after the start) left a JVM with no parent
running for good. So the gateway is started in a process group of its own (``bash
spark-submit``, the launcher JVM and the gateway JVM it execs), and that group is
terminated when the start fails or is interrupted, and at the driver's exit.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# how long the JVM has to stop by itself (shutdown hooks: the SparkContext, the Python
# daemon) before its group is killed
GRACE_SECONDS = 5.0
_LAUNCHED: list[subprocess.Popen] = []


@contextmanager
def own_group() -> Iterator[None]:
    """Around the session's start: a gateway PySpark launches meanwhile gets its own
    process group, terminated if the start does not complete."""
    from pyspark import java_gateway

    original = java_gateway.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen:
        proc = original(*args, **kwargs, start_new_session=True)
        _LAUNCHED.append(proc)
        return proc

    java_gateway.Popen = popen
    try:
        yield
    except BaseException:
        stop_all(grace=0.0)  # a JVM half started reads no stdin: it would outlive us
        raise
    finally:
        java_gateway.Popen = original


def stop_all(grace: float = GRACE_SECONDS) -> None:
    """End every gateway JVM this driver launched: its stdin closed (the JVM's own signal
    to stop), ``grace`` seconds for it to do so, then its whole process group killed."""
    if _LAUNCHED and grace > 0:
        _stop_context()
    while _LAUNCHED:
        proc = _LAUNCHED.pop()
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=grace) if grace > 0 else None
        except (OSError, subprocess.TimeoutExpired):
            pass
        for signum in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, signum)
            except (ProcessLookupError, PermissionError):
                break
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                continue


def exit_status(wait: float = 0.0) -> int | None:
    """The exit status of the gateway JVM this driver launched, once it has ended (waiting
    up to ``wait`` seconds for it); None while it runs or when none was launched here
    (under spark-submit the JVM is the parent)."""
    if not _LAUNCHED:
        return None
    try:
        return _LAUNCHED[-1].wait(timeout=wait) if wait > 0 else _LAUNCHED[-1].poll()
    except subprocess.TimeoutExpired:
        return None


def _stop_context() -> None:
    """Stop the SparkContext from Python first: stopped by the JVM's shutdown hook instead,
    it would leave PySpark's accumulator server thread printing an EOFError trace."""

    pyspark = sys.modules.get("pyspark")
    context = getattr(getattr(pyspark, "SparkContext", None), "_active_spark_context", None)
    if context is not None:
        try:
            context.stop()
        except Exception:  # a JVM already gone: nothing left to stop
            pass


def _at_exit() -> None:
    """The driver's exit: its exit code is decided, so a SIGINT or SIGTERM arriving now
    (a scheduler's timeout just after the run ended) must neither interrupt the JVM's
    shutdown with a trace nor leave the JVM behind."""
    if not _LAUNCHED:
        return
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    stop_all()


atexit.register(_at_exit)
