"""The per-file plan of a pool: each submission file is one Spark task.

A challenge pool is many submissions of at most 500,000 pairs. Scoring them all through
one shuffle and one global sort (the one-sort plan in ``matching/plan.py``) moves every
row across the cluster to compute figures that never mix two submissions. Here each task
reads one whole file with the in-process engine (``matching/local.py``: Arrow, integer
codes, the numpy specification) and sends back its metrics or its one-line error; the
ground truth travels once per executor as a broadcast. The figures are the
specification's, the same function the one-sort plan is held equal to, so both plans
give the same leaderboard to the last digit.

It needs files every executor can open as local files (``local[*]``, or a cluster whose
nodes share the path) of a size one Python worker holds comfortably; ``plan_for``
decides, and anything else goes through the one-sort plan.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pyspark.sql import SparkSession

from disc21spark.core import faults
from disc21spark.core.errors import InputError
from disc21spark.matching import local
from disc21spark.matching.model import GroundTruth, MatchingMetrics, Submission
from disc21spark.stats.model import Resampling

PLANS = ("auto", "per-file", "one-sort")


@dataclass(frozen=True)
class Outcome:
    """What one task sends back: metrics, or the submission's one-line error."""

    metrics: MatchingMetrics | None = None
    error: str | None = None
    needs_spark: bool = False  # found only on reading (e.g. a Parquet column type)


def plan_for(plan: str, subs: list[Submission], fmt: str, max_bytes: int) -> str:
    """per-file or one-sort for these submissions (``--pool-plan``). InputError when
    per-file is asked for files it cannot read."""
    if plan == "one-sort" or not subs:
        return "one-sort"
    why = next(filter(None, (_not_per_file(s, fmt, max_bytes if plan == "auto" else None)
                             for s in subs)), None)  # fmt: skip
    if why is None:
        return "per-file"
    if plan == "per-file":
        raise InputError("--pool-plan per-file", f"{why}; use --pool-plan one-sort")
    return "one-sort"


def _not_per_file(s: Submission, fmt: str, max_bytes: int | None) -> str | None:
    if s.source.startswith("table:"):
        return "a table with a submission column"
    why = local.unsupported(s.source, fmt)
    if why is not None:
        return why
    size = os.path.getsize(local.local_path(s.source))
    if max_bytes is not None and size > max_bytes:
        return f"{s.source}: {size:,} bytes, more than --local-max-bytes"
    return None


def score_files(
    spark: SparkSession,
    subs: list[Submission],
    gt: GroundTruth,
    fmt: str,
    max_results: int,
    curve_points: int,
    resampling: Resampling | None = None,
) -> list[Outcome]:
    """One Outcome per submission, in order; one Spark task per file."""
    sc = spark.sparkContext
    truth = sc.broadcast(gt)
    try:
        files = [s.source for s in subs]
        tasks = sc.parallelize(list(enumerate(files)), len(files))

        def one(task: tuple[int, str]) -> tuple[int, Outcome]:
            index, path = task
            faults.in_task()
            return index, score_one(path, truth.value, fmt, max_results, curve_points, resampling)

        # largest files first would balance better, but a file's size is its row count
        # only roughly; one task each is enough for the scheduler to fill every core
        found = dict(tasks.map(one).collect())
    finally:
        truth.unpersist()
    return [found[i] for i in range(len(subs))]


def score_one(
    path: str,
    gt: GroundTruth,
    fmt: str,
    max_results: int,
    curve_points: int,
    resampling: Resampling | None = None,
) -> Outcome:
    """One file in this process: what the task of ``score_files`` computes."""
    plain = local.local_path(path)  # Hadoop lists local files as file:/x
    if plain is None:
        return Outcome(needs_spark=True)
    try:
        metrics = local.score_file(
            plain, fmt, gt, max_results, curve_points, announce=False, resampling=resampling
        )
        return Outcome(metrics=metrics)
    except InputError as error:
        return Outcome(error=str(error))
    except local.NotForThisEngine:
        return Outcome(needs_spark=True)
