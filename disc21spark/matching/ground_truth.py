"""The first steps of every run (``first_steps``): the job settled, the ground truth
read on the driver and validated, the query groups read against it, before any heavy
work."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from disc21spark import engine
from disc21spark.core import fs
from disc21spark.core.phases import Phases
from disc21spark.matching.inprocess import source
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.rows import (
    GROUND_TRUTH_COLUMNS,
    parse_ground_truth,
    parse_plain_ground_truth,
)

if TYPE_CHECKING:
    from disc21spark.resolve import ResolvedInput


def load_ground_truth(files: fs.LocalFiles, gt: ResolvedInput) -> GroundTruth:
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


def ground_truth_phase(files: fs.LocalFiles, gt: ResolvedInput, phases: Phases) -> GroundTruth:
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


def first_steps(
    spark: Any,
    job: Any,
    phases: Phases,
    gt: GroundTruth | None = None,
    groups: Any = None,
) -> tuple[Any, GroundTruth, fs.LocalFiles]:
    """The first steps of every run, in this order: the command's, the pool's and the
    API's (docs/design.md, "One run, step by step"). The job's choice settled (a choice
    the command, the API or the pool settled already is returned as it is by
    ``engine.settle``; its outputs were checked there, resolve.py),
    its ground truth read from its resolved input on the engine the decision named
    (``gt``: the API's, read at its entry), its query groups read against it
    (``groups``: given). Returns the job with its settled choice and groups, the ground
    truth and the run's files (``core.fs.files_of``). Raises InputError, OutputError."""
    preds = [job.predictions] if isinstance(job.predictions, str) else list(job.predictions)
    fmt = job.predictions_format
    choice = engine.settle(spark, job.choice, preds, fmt=fmt, given=job)
    files = fs.files_of(choice.engine, spark)  # the engine the decision named
    if gt is None:
        gt = ground_truth_phase(files, choice.inputs.ground_truth, phases)
    if groups is None:
        groups = groups_phase(files.spark, job.query_groups, gt, phases)
    return replace(job, choice=choice, groups=groups), gt, files
