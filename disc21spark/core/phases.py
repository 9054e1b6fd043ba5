"""One log line per phase of a job, with its row count and seconds."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from disc21spark.core import faults, record

log = logging.getLogger("disc21spark")


class Phases:
    """Times phases; each ends with a line such as ``sort: 5,000,000 rows in 3.12 s``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.record = record.for_phases()

    @contextmanager
    def phase(self, name: str) -> Iterator[dict]:
        faults.at(name)
        note: dict = {}
        start = time.perf_counter()
        sc = _active_context()
        if sc is not None:  # the Spark UI names each job by the phase that ran it
            sc.setJobDescription(name)
        try:
            yield note
        finally:
            if sc is not None:
                sc.setJobDescription(None)
        elapsed = time.perf_counter() - start
        self.seconds[name] = round(elapsed, 3)
        self.record.phase_seconds[name] = round(elapsed, 3)
        rows = note.get("rows")
        counted = f"{rows:,} rows" if rows is not None else "done"
        extra = note.get("detail")
        log.info(
            "%-9s %s in %.2f s%s", name + ":", counted, elapsed, f" ({extra})" if extra else ""
        )


def _active_context():
    """The running SparkContext, if any; PySpark is not imported for it (the in-process
    engine starts no JVM and does not pay for the import)."""
    pyspark = sys.modules.get("pyspark")
    return getattr(pyspark, "SparkContext", None) and pyspark.SparkContext._active_spark_context
