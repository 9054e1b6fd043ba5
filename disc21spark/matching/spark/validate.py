"""Checks that turn bad input into one clear line naming the file, the row and the reason."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.errors import InputError
from disc21spark.core.paths import display_path
from disc21spark.core.spark import sql_text, with_views
from disc21spark.matching.rows import (
    MISSING_SCORE,
    MORE_FIELDS,
    NON_NUMERIC,
    NOT_UTF8,
    PREDICTION_COLUMNS,
    REPLACEMENT,
    WHITESPACE,
    duplicate_reason,
)
from disc21spark.matching.spark.read import find_lines

# The checks are SQL text, each parsed in the JVM in one call. Built as Column objects,
# every column, literal and operator was a py4j round trip: 1,100 to 1,400 of a tiny
# run's 3,600 to 4,000 (issue 47). The same expressions, operator for operator.
_REPLACED = (
    f"contains(concat_ws('', query_id, reference_id, score_raw, extra), {sql_text(REPLACEMENT)})"
)
# the quotes around a score are char(39): no escape for the parser to read either way
_NO_SCORE = "concat('score ', char(39), score_raw, char(39), ' is not a number')"
_SCORE_TEXT = "coalesce(score_raw, CAST(score AS STRING))"
_NOT_FINITE = f"concat('score ', char(39), {_SCORE_TEXT}, char(39), ' is not finite')"
# what is wrong with a prediction row (evaluated only for rows that are not fine)
PROBLEM = f"""CASE
    WHEN from_csv AND {_REPLACED} THEN {sql_text(NOT_UTF8)}
    WHEN extra IS NOT NULL THEN {sql_text(MORE_FIELDS)}
    WHEN query_id IS NULL OR query_id = '' THEN 'empty query_id'
    WHEN reference_id IS NULL OR reference_id = '' THEN 'empty reference_id'
    WHEN from_csv AND score_raw IS NULL THEN {sql_text(MISSING_SCORE)}
    WHEN NOT from_csv AND score IS NULL THEN {sql_text(NON_NUMERIC)}
    WHEN score IS NULL THEN {_NO_SCORE}
    ELSE {_NOT_FINITE}
END"""
# one cheap conjunction per row; the wording of a problem is built for bad rows only (a
# replaced byte in the score already makes it no number)
FINE = f"""coalesce(
    (NOT from_csv OR NOT (contains(query_id, {sql_text(REPLACEMENT)})
        OR contains(reference_id, {sql_text(REPLACEMENT)})))
    AND query_id != '' AND reference_id != '' AND extra IS NULL
    AND NOT isnan(score) AND abs(score) != CAST('Infinity' AS DOUBLE),
    false)"""
HEADER = " AND ".join(
    [
        f"{c} = {sql_text(name)}"
        for c, name in zip(("query_id", "reference_id", "score_raw"), PREDICTION_COLUMNS)
    ]
    + ["extra IS NULL"]
)
# + 0.0D turns -0.0 into 0.0: they tie in the official sort and must here too
SCORE = "coalesce(score, try_cast(score_raw AS DOUBLE)) + 0.0D"
# ``order`` first: the earliest bad row is the struct's minimum (the message names the
# first bad line, as the in-process engine does; within one split, rows keep file order)
BAD = f"""CASE WHEN NOT {FINE} THEN struct(
    `order`, file, from_csv, query_id, reference_id, score_raw, extra, {PROBLEM} AS problem)
END"""


def typed_predictions(raw: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
    """Header lines dropped, score typed, and ``bad``: null when the row is fine, else a
    struct saying where and what (only bad rows carry text beyond the ids). One SQL
    statement (``with_views``): a Column built in Python costs py4j calls a step."""
    kept = "".join("`{}`, ".format(c.replace("`", "``")) for c in keep)

    def statement(raw: str) -> str:
        typed = f"""SELECT {kept}file, `order`, from_csv, query_id, reference_id, score_raw,
            extra, {SCORE} AS score FROM {raw} WHERE NOT coalesce({HEADER}, false)"""
        return f"SELECT {kept}file, query_id, reference_id, score, {BAD} AS bad FROM ({typed})"

    return with_views(statement, raw=raw)


def problem_error(spark: SparkSession, bad) -> InputError:
    """The InputError for one bad row, naming its line (CSV) or its ids (Parquet)."""
    where = None
    if bad["from_csv"]:
        fields = (bad["query_id"], bad["reference_id"], bad["score_raw"])
        if bad["extra"] is not None:  # kept as split; find_lines strips fields, '' is None
            fields = fields + (bad["extra"].strip(WHITESPACE) or None,)
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
