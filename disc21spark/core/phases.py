"""One log line per phase of a job, with its row count and seconds."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from disc21spark.core import faults, progress, record

log = logging.getLogger("disc21spark")


class Phases:
    """Times phases; each ends with a line such as ``count: 5,000,000 rows in 3.12 s``."""

    def __init__(self) -> None:
        self.record = record.for_phases()

    @property
    def seconds(self) -> dict[str, float]:
        """Seconds by phase name: the run record's, where they are kept (once)."""
        return self.record.phase_seconds

    @contextmanager
    def phase(self, name: str, unit: str = "tasks") -> Iterator[dict]:
        """A phase; on Spark, how far its tasks are (``unit``: what a task is, such as
        "files" when each file is one) shows while it runs (core/progress.py)."""
        faults.at(name)
        note: dict = {}
        start = time.perf_counter()
        sc = _active_context()
        sc.setJobDescription(name)  # the Spark UI names each job by the phase that ran it
        shown = progress.spark_tasks(sc, name, unit) if sc is not _NO_CONTEXT else nullcontext()
        try:
            with shown:
                yield note
        finally:
            sc.setJobDescription(None)
        elapsed = time.perf_counter() - start
        self.record.phase_seconds[name] = round(elapsed, 3)
        rows = note.get("rows")
        counted = f"{rows:,} rows" if rows is not None else "done"
        extra = note.get("detail")
        log.info(
            "%-9s %s in %.2f s%s", name + ":", counted, elapsed, f" ({extra})" if extra else ""
        )


class _NoContext:
    """The job descriptions of a run without Spark: nowhere to show them."""

    def setJobDescription(self, value: str | None) -> None:  # SparkContext's name
        pass


_NO_CONTEXT = _NoContext()


def _active_context():
    """The running SparkContext, else ``_NoContext``; PySpark is not imported for it (the
    in-process engine starts no JVM and does not pay for the import)."""
    pyspark = sys.modules.get("pyspark")
    context = getattr(pyspark, "SparkContext", None)
    return (context and context._active_spark_context) or _NO_CONTEXT
