"""SIGINT and SIGTERM: raised where the driver is, and recorded, so that none is lost.

The handlers raise ``KeyboardInterrupt`` (``Terminated`` for SIGTERM) so that every
``finally`` runs (staging folders, cached rows, Spark). A raise can be swallowed: when the
signal lands while py4j runs a weakref callback, Python prints ``Exception ignored in:
<function JavaObject.__init__.<locals>.<lambda>>`` and the job goes on. So the handlers
also record the signal; publishing (``output.staged_output``) and the runner's exit check
the record, and an interrupted run exits 130/143 with the previous output untouched
whether or not the raise got through.

Once the output is in place the run is complete: a signal arriving then is recorded and
no longer raised (the run finishes its summary and exits 0, saying so).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the driver is, so that every ``finally`` (staging folders,
    cached rows) runs as for Ctrl-C."""


_state: dict[str, Any] = {"received": None, "published": False}


def _handle(signum: int, frame: Any) -> None:
    if _state["received"] is None:
        _state["received"] = signum
    if _state["published"]:
        return
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def install() -> Callable[[], None]:
    """Record-and-raise handlers for SIGINT and SIGTERM for one run (the main thread only:
    elsewhere Python has no handlers); returns what puts the previous handlers back."""
    reset()
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {s: signal.signal(s, _handle) for s in (signal.SIGINT, signal.SIGTERM)}
    hook = sys.unraisablehook
    sys.unraisablehook = _quiet_swallowed(hook)

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.unraisablehook = hook

    return restore


def reclaim() -> None:
    """Our handlers again after the SparkContext started: PySpark puts its own on SIGINT
    (it cancels the jobs and raises, recording nothing, so a swallowed Ctrl-C was lost and
    the cancelled job ended as exit 1). The runner stops Spark on either signal anyway."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _handle)


def quiet_accumulator_server(spark: Any) -> None:
    """PySpark's accumulator server (the SparkContext's of the session ``spark``, a
    socketserver) prints a request's error with its trace. Once a signal stopped the run,
    Spark cancels its jobs and the JVM may cut the server's connection mid-update
    (``EOFError``): expected, and its trace would be the only trace of an interrupted run
    (``tests/test_signals.py`` met one). Other errors print as before."""
    # None: no such server (Spark Connect, a test's stand-in session)
    server = getattr(getattr(spark, "sparkContext", None), "_accumulatorServer", None)
    if server is None or getattr(server.handle_error, "quiet_when_signalled", False):
        return
    default = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if _state["received"] is None:
            default(request, client_address)

    handle_error.quiet_when_signalled = True  # type: ignore[attr-defined]
    server.handle_error = handle_error


def _quiet_swallowed(hook: Callable[[Any], None]) -> Callable[[Any], None]:
    """Python's hook for an exception it cannot raise, minus our own swallowed signal:
    it is recorded, and its trace would be the only trace of an interrupted run."""

    def quiet(unraisable: Any) -> None:
        if not (_state["received"] and issubclass(unraisable.exc_type, KeyboardInterrupt)):
            hook(unraisable)

    return quiet


def reset() -> None:
    _state.update(received=None, published=False)


def received() -> int | None:
    """The first SIGINT/SIGTERM of this run, if any (None: none came)."""
    return _state["received"]


def check() -> None:
    """Raise the recorded signal again: called just before an output is put in place, so
    that a signal whose raise was swallowed still stops the publish."""
    signum = _state["received"]
    if signum is not None and not _state["published"]:
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def published() -> None:
    """The run's output is in place: from now on a signal no longer undoes the run."""
    _state["published"] = True


def is_published() -> bool:
    return bool(_state["published"])


def exit_code(signum: int) -> int:
    return EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED
