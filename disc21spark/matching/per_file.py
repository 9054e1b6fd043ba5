"""The per-file plan: each submission file is one Spark task, read through Spark.

A challenge pool is many submissions of at most 500,000 pairs. Scoring them all through
the distributed plan (``matching/score.py``) reads and checks every row in the JVM and
shuffles every row's pair hash for the repeat check, to compute figures that never mix
two submissions. Here each task
gets one whole file's bytes from Spark's ``binaryFile`` source (any path Spark reads:
local, hdfs://, s3a://, gs://, abfs://, viewfs://...), scores them with the in-process
engine (``matching/local.py``: Arrow reading from memory, .gz and .bz2 decompressed by
the name as Hadoop's codecs do, integer codes, the numpy specification) and sends back
its metrics or its one-line error; the ground truth travels once per executor as a
broadcast. The figures are the specification's, the same function the distributed plan is
held equal to, so both plans give the same leaderboard to the last digit.

``engine.settle`` decides which runs take this plan (by the files' names and sizes,
not their scheme); a file the task finds it cannot read as Spark does (a Parquet column
type, a file Spark returned no bytes for) is left for the distributed plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from disc21spark.core import faults
from disc21spark.core.errors import InputError
from disc21spark.core.paths import display_path
from disc21spark.matching import local
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.source import Source
from disc21spark.matching.stats.model import Resampling

if TYPE_CHECKING:  # a worker of the in-process pool (pool/in_process.py) needs no PySpark
    from pyspark.sql import SparkSession

# each file a partition of its own (the binaryFile source never splits a file): the
# scheduler then spreads the files over every core, one task each
ONE_FILE_PER_TASK = {
    "spark.sql.files.maxPartitionBytes": "1",
    "spark.sql.files.openCostInBytes": "0",
}


@dataclass(frozen=True)
class Outcome:
    """What one task sends back: metrics, or the submission's error as InputError's
    (source, reason, where), or that the distributed plan must read the file."""

    metrics: MatchingMetrics | None = None
    error: tuple[str, str, str | None] | None = None
    needs_spark: bool = False

    def input_error(self) -> InputError:
        return InputError(*self.error)


def score_files(
    spark: SparkSession,
    files: list[str],
    gt: GroundTruth,
    fmt: str,
    max_results: int,
    curve_points: int,
    sizes: dict[str, int] | None = None,
    resampling: Resampling | None = None,
    per_query: bool = False,
) -> list[Outcome]:
    """One Outcome per file of ``files`` (paths as listed by ``data_files``), in order;
    one Spark task per file. ``sizes``: bytes per file, when listed (a file of zero
    bytes, for which the binaryFile source returns no row, is scored here);
    ``per_query``: each file's metrics carry its per-query table."""
    from disc21spark.core.spark import spark_conf

    limits, options = (
        (max_results, curve_points),
        {"resampling": resampling, "per_query": per_query},
    )
    sc = spark.sparkContext
    truth = sc.broadcast(gt)
    try:
        reader = spark.read.format("binaryFile")
        # a file gone or unreadable gives no row (and goes to the distributed plan, whose
        # messages name it) rather than failing every other file's task
        reader = reader.option("ignoreCorruptFiles", "true").option("ignoreMissingFiles", "true")

        def one(row) -> tuple[str, Outcome]:
            faults.in_task()
            source = Source.of_bytes(row.path, bytes(row.content))
            return row.path, task_outcome(source, truth.value, fmt, limits, options)

        with spark_conf(spark, ONE_FILE_PER_TASK):
            frame = reader.load(files).select("path", "content")
            found = dict(frame.rdd.map(one).collect())
    finally:
        truth.unpersist()
    # the rows name a file by its decoded path, the listing (and a user) may give its URI
    by_name = {display_path(unquote(path)): outcome for path, outcome in found.items()}
    empty = {f for f in files if (sizes or {}).get(f) == 0}
    return [
        by_name.get(display_path(unquote(f)))
        or (
            task_outcome(Source.of_bytes(f, b""), gt, fmt, limits, options)
            if f in empty
            else Outcome(needs_spark=True)
        )
        for f in files
    ]


def task_outcome(
    source: Source, gt: GroundTruth, fmt: str, limits: tuple[int, int], options: dict | None = None
) -> Outcome:
    """One file in this process: what a task of ``score_files`` computes. ``limits``:
    (max_results, curve_points); ``options``: ``local.score_source``'s ``resampling`` and
    ``per_query``."""
    try:
        metrics = local.score_source(source, fmt, gt, *limits, announce=False, **(options or {}))
        return Outcome(metrics=metrics)
    except InputError as error:
        return Outcome(error=(error.source, error.reason, error.where))
    except local.NotForThisEngine:
        return Outcome(needs_spark=True)
