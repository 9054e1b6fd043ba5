"""Checks that turn bad input into one clear line naming the file, the row and the reason."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.errors import InputError
from disc21spark.core.paths import display_path
from disc21spark.matching.rows import (
    MISSING_SCORE,
    MORE_FIELDS,
    NON_NUMERIC,
    NOT_UTF8,
    PREDICTION_COLUMNS,
    REPLACEMENT,
    duplicate_reason,
)
from disc21spark.matching.spark.read import find_lines


def _problem(is_csv: Column) -> Column:
    """What is wrong with a prediction row (evaluated only for rows that are not fine)."""
    q, r, raw, score = (F.col(c) for c in ("query_id", "reference_id", "score_raw", "score"))
    text = F.coalesce(raw, score.cast("string"))
    replaced = F.concat_ws("", q, r, raw, F.col("extra")).contains(REPLACEMENT)
    return (
        F.when(is_csv & replaced, F.lit(NOT_UTF8))
        .when(F.col("extra").isNotNull(), F.lit(MORE_FIELDS))
        .when(q.isNull() | (q == ""), F.lit("empty query_id"))
        .when(r.isNull() | (r == ""), F.lit("empty reference_id"))
        .when(is_csv & raw.isNull(), F.lit(MISSING_SCORE))
        .when(~is_csv & score.isNull(), F.lit(NON_NUMERIC))
        .when(score.isNull(), F.concat(F.lit("score '"), raw, F.lit("' is not a number")))
        .otherwise(F.concat(F.lit("score '"), text, F.lit("' is not finite")))
    )


def _is_fine() -> Column:
    # one cheap conjunction per row; the wording of a problem is built for bad rows only
    q, r, score = F.col("query_id"), F.col("reference_id"), F.col("score")
    # a replaced byte in the score already makes it no number
    text = ~F.col("from_csv") | ~(q.contains(REPLACEMENT) | r.contains(REPLACEMENT))
    return F.coalesce(
        text
        & (q != "")
        & (r != "")
        & F.col("extra").isNull()
        & ~F.isnan(score)
        & (F.abs(score) != float("inf")),
        F.lit(False),
    )


def typed_predictions(raw: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
    """Header lines dropped, score typed, and ``bad``: null when the row is fine, else a
    struct saying where and what (only bad rows carry text beyond the ids)."""
    is_header = (
        (F.col("query_id") == PREDICTION_COLUMNS[0])
        & (F.col("reference_id") == PREDICTION_COLUMNS[1])
        & (F.col("score_raw") == PREDICTION_COLUMNS[2])
        & F.col("extra").isNull()
    )
    rows = raw.where(~F.coalesce(is_header, F.lit(False)))
    # + 0.0 turns -0.0 into 0.0: they tie in the official sort and must here too
    score = F.coalesce(F.col("score"), F.col("score_raw").try_cast("double")) + F.lit(0.0)
    rows = rows.withColumn("score", score)
    # ``order`` first: the earliest bad row is the struct's minimum (the message names the
    # first bad line, as the in-process engine does; within one split, rows keep file order)
    bad = F.struct(
        "order",
        "file",
        "from_csv",
        "query_id",
        "reference_id",
        "score_raw",
        "extra",
        _problem(F.col("from_csv")).alias("problem"),
    )
    return rows.select(
        *keep,
        "file",
        "query_id",
        "reference_id",
        "score",
        F.when(~_is_fine(), bad).alias("bad"),
    )


def problem_error(spark: SparkSession, bad) -> InputError:
    """The InputError for one bad row, naming its line (CSV) or its ids (Parquet)."""
    where = None
    if bad["from_csv"]:
        fields = (bad["query_id"], bad["reference_id"], bad["score_raw"])
        if bad["extra"] is not None:  # an empty fourth field is None to find_lines
            fields = fields + (bad["extra"] or None,)
        lines = find_lines(spark, bad["file"], fields, limit=1)
        where = f"line {lines[0]}" if lines else None
    if where is None:  # Parquet has no lines; name the row by its ids
        where = f"row query_id={bad['query_id']!r}, reference_id={bad['reference_id']!r}"
    return InputError(display_path(bad["file"]), bad["problem"], where)


def duplicate_error(spark: SparkSession, typed: DataFrame, suspects: Column) -> InputError | None:
    """Name a repeated (query, reference) pair and where it repeats (None: no repeat).

    The scoring pass finds repeats by 64-bit pair hash within each query; here the strings
    of the suspect rows decide, so a hash collision never rejects a good submission (then
    every row is checked before giving up).
    """
    dup = []
    for rows in (typed.where(suspects), typed):
        dup = (
            rows.groupBy("query_id", "reference_id")
            .agg(F.count(F.lit(1)).alias("n"), F.array_sort(F.collect_set("file")).alias("files"))
            .where(F.col("n") > 1)
            .limit(1)
            .collect()
        )
        if dup:
            break
    if not dup:
        return None
    q, r, n, files = dup[0]["query_id"], dup[0]["reference_id"], dup[0]["n"], dup[0]["files"]
    where = None
    if len(files) == 1:
        lines = find_lines(spark, files[0], (q, r), limit=2)
        if len(lines) == 2:
            where = f"lines {lines[0]} and {lines[1]}"
    files_text = ", ".join(display_path(f) for f in files)
    return InputError(files_text, duplicate_reason(q, r, n), where)
