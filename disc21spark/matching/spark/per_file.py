"""The per-file plan: each submission file is one Spark task, read through Spark.

A challenge pool is many submissions of at most 500,000 pairs. Scoring them all through
the distributed plan (``matching/spark/score.py``) reads and checks every row in the JVM and
shuffles every row's pair hash for the repeat check, to compute figures that never mix
two submissions. Here each task
gets one whole file's bytes from Spark's ``binaryFile`` source (any path Spark reads:
local, hdfs://, s3a://, gs://, abfs://, viewfs://...), scores them with the in-process
engine (``matching/inprocess/local.py``: Arrow reading from memory, .gz and .bz2 decompressed by
the codec the decision resolved from the name as Hadoop does, integer codes, the numpy
specification) and sends back
its metrics or its one-line error; the ground truth travels once per executor as a
broadcast. The figures are the specification's, the same function the distributed plan is
held equal to, so both plans give the same leaderboard to the last digit.

``engine.settle`` decides which runs take this plan (by the files' names and sizes,
not their scheme); a file the task finds it cannot read as Spark does (a Parquet column
type, a file Spark returned no bytes for) is left for the distributed plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from disc21spark.core import faults
from disc21spark.core.errors import InputError
from disc21spark.core.paths import display_path
from disc21spark.matching.inprocess import local
from disc21spark.matching.inprocess.source import Source
from disc21spark.matching.model import GroundTruth, MatchingMetrics, Settings
from disc21spark.matching.stats import weighted

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
    spark: SparkSession, inputs: Sequence[Any], gt: GroundTruth, settings: Settings
) -> list[Outcome]:
    """One Outcome per file of ``inputs`` (``resolve.ResolvedInput``: paths as listed by
    ``data_files``, their format and size as resolved), in order; one Spark task per
    file, scored with ``settings`` (``model.Settings``). A file of zero bytes, for which
    the binaryFile source returns no row, is scored here."""
    from disc21spark.core.spark import spark_conf

    files = [one.given for one in inputs]
    resolved = {display_path(unquote(one.given)): one for one in inputs}
    sc = spark.sparkContext
    # the ground truth and the resample weights, drawn once here, travel once per executor
    settings = weighted.with_weights(gt, settings)
    truth = sc.broadcast((gt, settings))
    try:
        reader = spark.read.format("binaryFile")
        # a file gone or unreadable gives no row (and goes to the distributed plan, whose
        # messages name it) rather than failing every other file's task
        reader = reader.option("ignoreCorruptFiles", "true").option("ignoreMissingFiles", "true")

        def one(row) -> tuple[str, Outcome]:
            faults.in_task()
            listed = resolved[display_path(unquote(row.path))]
            source = Source.of_bytes(row.path, bytes(row.content), listed)
            return row.path, task_outcome(source, *truth.value)

        with spark_conf(spark, ONE_FILE_PER_TASK):
            frame = reader.load(files).select("path", "content")
            found = dict(frame.rdd.map(one).collect())
    finally:
        truth.unpersist()
    # the rows name a file by its decoded path, the listing (and a user) may give its URI
    by_name = {display_path(unquote(path)): outcome for path, outcome in found.items()}
    return [
        by_name.get(display_path(unquote(one.given)))
        or (
            task_outcome(Source.of_bytes(one.given, b"", one), gt, settings)
            if one.size == 0
            else Outcome(needs_spark=True)
        )
        for one in inputs
    ]


def task_outcome(source: Source, gt: GroundTruth, settings: Settings) -> Outcome:
    """One file in this process: what a task of ``score_files`` computes."""
    return outcome_of(lambda: local.score_source(source, gt, settings, announce=False))


def outcome_of(score: Callable[[], MatchingMetrics]) -> Outcome:
    """The Outcome of ``score()``: its metrics; its InputError as the file's error; the
    distributed plan's when the file is not for this engine (``NotForThisEngine``)."""
    try:
        return Outcome(metrics=score())
    except InputError as error:
        return Outcome(error=(error.source, error.reason, error.where))
    except local.NotForThisEngine:
        return Outcome(needs_spark=True)
