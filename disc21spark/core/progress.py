"""How far a long phase is, on standard error: a bar on a terminal (tqdm), a plain log
line now and then elsewhere (a log file, Airflow's task log), nothing with ``--quiet``
or from the library API (whose logger has no handler of ours), never in the outputs.

Two sources: a count the caller advances (``counter``: rows read in this process) and
Spark's own task counts (``spark_tasks``: the stages a phase runs, polled from the
driver's status tracker, so files of a per-file pool, query partitions of a search).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("disc21spark")

# a phase shorter than this shows nothing (its end line says it all)
DELAY = 3.0
# a plain line at most this often where there is no terminal
LOG_EVERY = 30.0
# how often Spark's task counts are read
POLL = 1.0


def enabled() -> bool:
    """Progress is shown when the command line's logging is on (not ``--quiet``)."""
    return bool(log.handlers) and log.isEnabledFor(logging.INFO)


class _Shown:
    """One phase's progress: ``update(done, total)`` with absolute counts."""

    def __init__(self, name: str, unit: str) -> None:
        self.name, self.unit = name, unit
        self.start = time.monotonic()
        self.logged = self.start
        self.bar: Any = None
        self.tty = sys.stderr.isatty()

    def update(self, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if now - self.start < DELAY:
            return
        if self.tty:
            self._draw(done, total)
        elif now - self.logged >= LOG_EVERY:
            self.logged = now
            of = f" of {total:,}" if total else ""
            log.info("%-9s %s%s %s so far", self.name + ":", f"{done:,}", of, self.unit)

    def _draw(self, done: int, total: int | None) -> None:
        if self.bar is None:
            from tqdm import tqdm  # only when a bar is drawn

            self.bar = tqdm(desc=self.name, unit=" " + self.unit, file=sys.stderr, leave=False)
        if total is not None and self.bar.total != total:
            self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()  # leave=False: the phase's end line takes its place


class Counter:
    """A count the caller advances (``add(n)``), shown as ``name: N unit``."""

    def __init__(self, shown: _Shown | None) -> None:
        self.shown, self.done = shown, 0

    def add(self, n: int) -> None:
        self.done += n
        if self.shown is not None:
            self.shown.update(self.done)


@contextmanager
def counter(name: str, unit: str) -> Iterator[Counter]:
    """``with counter("read", "rows") as c: c.add(len(batch))``."""
    shown = _Shown(name, unit) if enabled() else None
    try:
        yield Counter(shown)
    finally:
        if shown is not None:
            shown.close()


@contextmanager
def spark_tasks(context: Any, name: str, unit: str = "tasks") -> Iterator[None]:
    """Spark's tasks done of the stages that run inside the block, read every ``POLL``
    seconds by a daemon thread (``context``: the SparkContext)."""
    if not enabled():
        yield
        return
    shown, stop = _Shown(name, unit), threading.Event()
    seen: dict[int, tuple[int, int]] = {}
    tracker = context.statusTracker()

    def poll() -> None:
        while not stop.wait(POLL):
            try:
                for stage in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage)
                    if info is not None:
                        seen[stage] = (info.numCompletedTasks, info.numTasks)
            except Exception:  # the session stopping under us: nothing more to show
                return
            if seen:  # nothing to show before the phase's first stage starts
                done, total = (sum(column) for column in zip(*seen.values()))
                shown.update(done, total)

    thread = threading.Thread(target=poll, name=f"progress-{name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2 * POLL)
        shown.close()
