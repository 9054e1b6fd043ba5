"""The ground truth of a run: read on the driver and validated before any heavy work."""

from __future__ import annotations

from typing import Any

from disc21spark.core.phases import Phases
from disc21spark.engine import engine_of
from disc21spark.matching.inprocess import source
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.rows import (
    GROUND_TRUTH_COLUMNS,
    parse_ground_truth,
    parse_plain_ground_truth,
)


def load_ground_truth(spark: Any, path: str, fmt: str = "auto") -> GroundTruth:
    """Read on the run's engine (``engine.engine_of``): through Spark (any Hadoop path),
    or, without a session, from a local file with the same rules. Raises InputError."""
    if engine_of(spark).name == "spark":
        # here, not above: the in-process engine never pays for importing PySpark
        from disc21spark.matching.spark.read import spark_table_rows

        rows = spark_table_rows(spark, path, GROUND_TRUTH_COLUMNS, fmt)
    else:
        lines = source.local_lines(path, fmt)
        fast = None if lines is None else parse_plain_ground_truth(lines, path)
        if fast is not None:
            return fast
        rows = source.local_table_rows(path, GROUND_TRUTH_COLUMNS, fmt)
    return parse_ground_truth(rows, path)


def ground_truth_phase(spark: Any, path: str, fmt: str, phases: Phases) -> GroundTruth:
    """The ground truth, read first so that a bad file fails before any heavy work."""
    with phases.phase("ground truth") as note:
        gt = load_ground_truth(spark, path, fmt)
        note["rows"] = gt.n_queries
        note["detail"] = f"{gt.n_positives:,} positive pairs"
    return gt


def groups_phase(spark: Any, path: str | None, gt: GroundTruth, phases: Phases) -> Any:
    """The --query-groups file read against ``gt`` (a QueryGroups; None without one),
    before any heavy work: a bad file fails in one line."""
    if path is None:
        return None
    from disc21spark.matching.stats.groups_file import read_query_groups

    with phases.phase("query groups") as note:
        groups = read_query_groups(path, gt, spark)
        note["rows"] = int(groups.sizes.sum())
        note["detail"] = f"{len(groups.names)} groups"
    return groups
