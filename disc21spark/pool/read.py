"""A pool's submissions (``list_submissions``: names, sources, checksums) and its rows on
Spark: the submission files (or one table with a submission column) read into one frame
of typed predictions, each row with its submission's index."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core import fs
from disc21spark.core.errors import InputError
from disc21spark.matching.model import Submission
from disc21spark.matching.spark import labels, validate
from disc21spark.matching.spark.read import read_predictions
from disc21spark.pool.listing import file_checksums, named_files, table_checksums


def read_pool(
    spark: SparkSession, job: Any, subs: list[Submission], only: list[str] | None = None
) -> DataFrame:
    """Typed predictions of the given submissions with an int ``submission`` column
    (index in ``subs``); ``only``: the rows of these query ids alone (a board's)."""
    typed = _read_submissions(spark, job, subs)
    if only is None:
        return typed
    queries = spark.createDataFrame([(q,) for q in only], "query_id string")
    return typed.join(F.broadcast(queries), "query_id", "left_semi")


def _read_submissions(spark: SparkSession, job: Any, subs: list[Submission]) -> DataFrame:
    index = {s.source: i for i, s in enumerate(subs)}
    if job.submission_column:
        table = submission_table(spark, job)
        typed = validate.typed_predictions(table, keep=("_submission",))
        names = spark.createDataFrame(
            [(s.name, i) for i, s in enumerate(subs)], f"_name string, {labels.SUBMISSION} int"
        )
        # only the submissions asked for (the others are reused from a previous run)
        named = typed.withColumn("_name", F.col("_submission").cast("string"))
        return named.join(F.broadcast(names), "_name").drop("_name", "_submission")
    frames = []
    by_format: dict[str, list[str]] = {}
    for s in subs:
        by_format.setdefault(job.choice.inputs.of(s.source).format, []).append(s.source)
    for fmt, files in by_format.items():
        # each Parquet file with its own schema (a score stored as text in one file must
        # not decide how the others are read); CSV files are all text alike
        groups = [[f] for f in files] if fmt == "parquet" else [files]
        for group in groups:
            raw = read_predictions(spark, group, fmt, listed=job.choice.listed)
            frames.append(validate.typed_predictions(raw))
    typed = frames[0]
    for other in frames[1:]:
        typed = typed.unionByName(other)
    # Spark names a row's file by its URI ("a%20b.csv"), the listing by its path; a
    # broadcast hash join, not a literal map (looked up by a linear scan of its keys)
    files = spark.createDataFrame(
        [(fs.uri(spark, f), i) for f, i in index.items()],
        f"file string, {labels.SUBMISSION} int",
    )
    return typed.join(F.broadcast(files), "file", "left")


def submission_table(spark: SparkSession, job: Any) -> DataFrame:
    """The raw predictions of a one-table pool, with its submission column kept."""
    fmt = job.choice.inputs.predictions[0].format
    if fmt != "parquet":
        raise InputError(
            job.predictions[0], "--submission-column needs a Parquet table (CSV has 3 fields)"
        )
    raw = read_predictions(spark, job.predictions, fmt, keep=(job.submission_column,))
    return raw.withColumnRenamed(job.submission_column, "_submission")


def list_submissions(spark: SparkSession, job: Any) -> tuple[list[Submission], dict[str, int]]:
    """The pool's submissions, and each submission file's size in bytes."""
    if job.submission_column:
        table = submission_table(spark, job)
        sums = table_checksums(table, "_submission")
        if None in sums:
            raise InputError(
                job.predictions[0], f"rows without a {job.submission_column} (the submission)"
            )
        for name in sums:
            if not name or name.startswith(".") or any(c in "/\\" or c < " " for c in name):
                # a name becomes pr_curves/<name>.csv: it must stay a file inside --output
                raise InputError(
                    job.predictions[0],
                    f"submission name {name!r} cannot name a file "
                    "(no '/', '\\', leading '.' or control character)",
                )
        return [Submission(name, f"table:{name}", sums[name]) for name in sorted(sums)], {}
    files = named_files(job.choice.files)
    sums = file_checksums(spark, [file for file, _ in files.values()])
    subs = [Submission(name, file, sums[file]) for name, (file, _) in files.items()]
    return subs, dict(files.values())
