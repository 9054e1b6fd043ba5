"""Checks that turn bad input into one clear line naming the file, the row and the reason."""

from __future__ import annotations

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.errors import InputError, display_path
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.read import GROUND_TRUTH_COLUMNS, PREDICTION_COLUMNS, Row, find_lines

FIELDS = "expected 3 fields: query_id,reference_id,score"


def _problem(is_csv: Column) -> Column:
    """What is wrong with a prediction row (evaluated only for rows that are not fine)."""
    q, r, raw, score = (F.col(c) for c in ("query_id", "reference_id", "score_raw", "score"))
    text = F.coalesce(raw, score.cast("string"))
    return (
        F.when(F.col("extra").isNotNull(), F.lit(f"{FIELDS}, found more"))
        .when(q.isNull() | (q == ""), F.lit("empty query_id"))
        .when(r.isNull() | (r == ""), F.lit("empty reference_id"))
        .when(is_csv & raw.isNull(), F.lit(f"missing score ({FIELDS})"))
        .when(~is_csv & score.isNull(), F.lit("missing or non-numeric score"))
        .when(score.isNull(), F.concat(F.lit("score '"), raw, F.lit("' is not a number")))
        .otherwise(F.concat(F.lit("score '"), text, F.lit("' is not finite")))
    )


def _is_fine() -> Column:
    # one cheap conjunction per row; the wording of a problem is built for bad rows only
    q, r, score = F.col("query_id"), F.col("reference_id"), F.col("score")
    return F.coalesce(
        (q != "")
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
    bad = F.struct(
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


def raise_problem(spark: SparkSession, bad) -> None:
    """Raise the InputError for one bad row (the ``bad`` struct of typed_predictions)."""
    raise problem_error(spark, bad)


def problem_error(spark: SparkSession, bad) -> InputError:
    """The InputError for one bad row, naming its line (CSV) or its ids (Parquet)."""
    where = None
    if bad["from_csv"]:
        fields = (bad["query_id"], bad["reference_id"], bad["score_raw"])
        if bad["extra"] is not None:
            fields = fields + (bad["extra"],)
        lines = find_lines(spark, bad["file"], fields, limit=1)
        where = f"line {lines[0]}" if lines else None
    if where is None:  # Parquet has no lines; name the row by its ids
        where = f"row query_id={bad['query_id']!r}, reference_id={bad['reference_id']!r}"
    return InputError(display_path(bad["file"]), bad["problem"], where)


def check_max_results(source: str, n_rows: int, max_results: int) -> None:
    error = max_results_error(source, n_rows, max_results)
    if error:
        raise error


def max_results_error(source: str, n_rows: int, max_results: int) -> InputError | None:
    if max_results and n_rows > max_results:
        return InputError(
            source,
            f"{n_rows:,} predictions, more than --max-results {max_results:,} "
            "(pass --max-results 0 for no limit)",
        )
    return None


def raise_duplicate(spark: SparkSession, typed: DataFrame, suspects: Column) -> None:
    error = duplicate_error(spark, typed, suspects)
    if error:
        raise error


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
    reason = (
        f"duplicate pair ({q}, {r}) appears {n} times; "
        "the official scorer rejects duplicate predictions"
    )
    return InputError(", ".join(display_path(f) for f in files), reason, where)


def ground_truth(rows: list[Row], source: str) -> GroundTruth:
    """Validate ground-truth records: an empty reference_id marks a distractor query."""
    header = GROUND_TRUTH_COLUMNS
    queries: dict[str, str] = {}
    pos_q: list[str] = []
    pos_r: list[str] = []
    seen: dict[tuple[str, str], str] = {}
    for row in rows:
        fields = tuple("" if f is None else f.strip() for f in row.fields)
        if fields == header:
            continue
        if len(fields) != 2:
            raise InputError(
                source, f"expected 2 fields: query_id,reference_id, found {len(fields)}", row.where
            )
        q, r = fields
        if not q:
            raise InputError(source, "empty query_id", row.where)
        if (q, r) in seen:
            raise InputError(
                source, f"duplicate ground-truth row ({q}, {r}), also on {seen[q, r]}", row.where
            )
        seen[q, r] = row.where
        if q in queries and (queries[q] == "" or r == ""):
            raise InputError(
                source,
                f"query {q} is listed both as a distractor and with a reference "
                f"(first on {seen[q, queries[q]]})",
                row.where,
            )
        queries.setdefault(q, r)
        if r:
            pos_q.append(q)
            pos_r.append(r)
    if not queries:
        raise InputError(source, "ground truth is empty")
    if not pos_q:
        raise InputError(source, "ground truth has no positive pair (every reference_id is empty)")
    return GroundTruth(
        source=source,
        query_ids=np.array(list(queries), dtype=object),
        positive_queries=np.array(pos_q, dtype=object),
        positive_references=np.array(pos_r, dtype=object),
    )
