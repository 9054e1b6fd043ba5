"""The ground truth of a run: read on the driver and validated before any heavy work."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from disc21spark.core.phases import Phases
from disc21spark.matching.inprocess import source
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.rows import (
    GROUND_TRUTH_COLUMNS,
    parse_ground_truth,
    parse_plain_ground_truth,
)

if TYPE_CHECKING:
    from disc21spark.core.fs import LocalFiles
    from disc21spark.resolve import ResolvedInput


def load_ground_truth(files: LocalFiles, gt: ResolvedInput) -> GroundTruth:
    """``gt`` (resolved by the decision) read on the run's engine, as ``files`` names it
    (``core.fs.files_of``): through Spark (any Hadoop path), or from a local file with
    the same rules. Raises InputError naming the path as given."""
    if files.name == "spark":
        # here, not above: the in-process engine never pays for importing PySpark
        from disc21spark.matching.spark.read import spark_table_rows

        rows = spark_table_rows(files.spark, gt, GROUND_TRUTH_COLUMNS)
    else:
        lines = source.local_lines(gt)
        fast = None if lines is None else parse_plain_ground_truth(lines, gt.given)
        if fast is not None:
            return fast
        rows = source.local_table_rows(gt, GROUND_TRUTH_COLUMNS)
    return parse_ground_truth(rows, gt.given)


def ground_truth_phase(files: LocalFiles, gt: ResolvedInput, phases: Phases) -> GroundTruth:
    """The ground truth, read first so that a bad file fails before any heavy work."""
    with phases.phase("ground truth") as note:
        truth = load_ground_truth(files, gt)
        note["rows"] = truth.n_queries
        note["detail"] = f"{truth.n_positives:,} positive pairs"
    return truth


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
