"""The checking pass of the distributed plan: counts, bad rows, repeated pairs and the true pairs.

A first job finds the most rows of one query (it fills the plan's cache of the labelled
rows); then one aggregation in the JVM reads them once. A repeated pair shares its
query and its 64-bit pair hash. So the rows are grouped by (submission, query, a slice
of the pair hashes): each group collects its hashes in a list. A repeat is a list
holding fewer distinct values than values. Map-side partial aggregation builds those
lists where the rows are, so what a shuffle moves is about the hashes themselves (8
bytes a row, in few records), not a record per row. The slices bound a list to a share
of one query's rows. There are as few as keep every list about ``LIST_MAX`` long at
most, given the most rows of one query: one slice up to 2M rows a query (DISC21's
files have a few hundred).
Two small aggregations then sum the groups per query and per submission: the driver gets
one row per submission, with its counts and its predicted true pairs (at most the ground
truth's positives; every row of the plan that follows is counted against them).

The first bad row itself (its file, line and reason) is looked up in the parsed input
only for a submission that has one; a repeat is confirmed on the strings
(``validate.duplicate_error``), so a hash collision cannot reject a good submission.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from disc21spark.matching.positions import EMPTY, TrueScores
from disc21spark.matching.spark.labels import SUBMISSION

# a query's pair hashes are collected in slices of the hashes, a list each: as few as keep
# every list about LIST_MAX long at most. A list holds its hashes as Java objects: one list of
# a one-query file's 8M rows ran a 1 GB driver out of heap, two of 4M passed. Each slice
# is a group of the aggregation, so one a query is fastest (docs/design.md, "The
# census's slices")
LIST_MAX = 2_000_000


@dataclass(frozen=True)
class Census:
    """One submission as the checking pass sees it: its counts, and its predicted true
    pairs (``truth``) and lowest score (``bottom``, +inf without rows), which the
    counting pass needs."""

    n_predictions: int
    n_bad: int
    first_bad: object  # the ``bad`` struct of one bad row, or None
    n_unknown_query_predictions: int
    n_known_queries: int
    n_repeated_pairs: int
    repeating_query: int | None  # index of a query with a repeated pair hash
    truth: TrueScores = EMPTY
    bottom: float = float("inf")


EMPTY_CENSUS = Census(0, 0, None, 0, 0, 0, None)


def census(
    rows: DataFrame,
    pairs: DataFrame | None = None,
    partitions: int | None = None,
    list_max: int = LIST_MAX,
) -> dict[int, Census]:
    """Counts, checks and true pairs of every submission of compact rows
    (``labels.labelled``). ``partitions``: the rows' keys are first shuffled into that
    many partitions by (submission, query) (None: no such shuffle; Spark's adaptive
    execution sizes the aggregation's). ``pairs``: the parsed predictions the rows come
    from, when they need checking: then the rows carry ``bad`` (a boolean) and the first
    bad row of a submission is looked up in ``pairs`` (its ``bad`` struct). ``list_max``:
    about the longest list of hashes the repeat check collects (``slice_count``).

    Two Spark actions read ``rows``: the first finds the most rows of a query
    (``most_rows_of_a_query``), the second is the census. Persisted rows (as
    ``score.score`` persists them) are read from the input once, by the first.
    Raises ValueError when ``list_max`` < 1; Spark's errors reading the input pass on."""
    n_slices = slice_count(most_rows_of_a_query(rows), list_max)
    flag = F.col("bad") if pairs is not None else F.lit(False)
    keys = rows.select(SUBMISSION, "query_index", "label", "score", "pair", flag.alias("is_bad"))
    if partitions:
        # beyond 64 tasks a core, more partitions only add tasks (a value larger than the
        # rows, say, would schedule that many empty ones)
        most_partitions = 64 * rows.sparkSession.sparkContext.defaultParallelism
        keys = keys.repartition(min(partitions, most_partitions), SUBMISSION, "query_index")
    found = {r[SUBMISSION]: r for r in _per_submission(_per_query(keys, n_slices)).collect()}
    first_bad = _first_bad(pairs, [s for s, r in found.items() if r["bad"]])
    return {sub: _of(r, first_bad.get(sub)) for sub, r in found.items()}


def most_rows_of_a_query(rows: DataFrame) -> int:
    """The most rows one (submission, query) holds in ``rows`` (0 without rows): a Spark
    action, which fills the cache of persisted rows."""
    most = rows.groupBy(SUBMISSION, "query_index").count().selectExpr("max(count)").first()
    return int(most[0] or 0)


def slice_count(most: int, list_max: int = LIST_MAX) -> int:
    """In how many slices the census collects each query's pair hashes when a query has
    at most ``most`` rows: as few as keep a list at most ``list_max`` long on average,
    at least one. A hash's remainder splits a query's rows about evenly. Every copy of
    a pair goes to one list, whatever the slices. Raises ValueError when ``list_max`` < 1."""
    if list_max < 1:
        raise ValueError(f"list_max must be at least 1, not {list_max}")
    return max(1, -(-most // list_max))


def _per_query(keys: DataFrame, n_slices: int) -> DataFrame:
    """One row per (submission, query): rows, bad rows, lowest score, repeats and the
    scores of its true pairs, the pair hashes collected in ``n_slices`` lists."""
    hashes = F.collect_list("pair")
    sliced = keys.groupBy(
        SUBMISSION, "query_index", F.pmod("pair", F.lit(n_slices)).alias("slice")
    ).agg(
        F.count(F.lit(1)).alias("n"),
        F.count_if("is_bad").alias("bad"),
        F.min("score").alias("bottom"),
        (F.size(hashes) - F.size(F.array_distinct(hashes))).alias("repeats"),
        # collect_list leaves the nulls out: the scores of the true pairs only
        F.collect_list(F.when(F.col("label"), F.col("score"))).alias("true"),
    )
    return sliced.groupBy(SUBMISSION, "query_index").agg(
        F.sum("n").alias("n"),
        F.sum("bad").alias("bad"),
        F.min("bottom").alias("bottom"),
        F.sum("repeats").alias("repeats"),
        F.flatten(F.collect_list("true")).alias("true"),
    )


def _per_submission(queries: DataFrame) -> DataFrame:
    """One row per submission from its queries' rows (``_per_query``)."""
    known = F.col("query_index") >= 0
    return queries.groupBy(SUBMISSION).agg(
        F.sum("n").alias("n"),
        F.sum("bad").alias("bad"),
        F.sum(F.when(~known, F.col("n")).otherwise(0)).alias("unknown"),
        F.count_if(known).alias("known_queries"),
        F.sum("repeats").alias("repeats"),
        F.min(F.when(F.col("repeats") > 0, F.col("query_index"))).alias("repeating"),
        F.min("bottom").alias("bottom"),
        F.collect_list(
            F.when(F.size("true") > 0, F.struct(F.col("query_index").alias("q"), "true"))
        ).alias("truths"),
    )


def _of(r, first_bad) -> Census:
    """A submission's Census from its ``_per_submission`` row."""
    query = [t["q"] for t in r["truths"] for _ in t["true"]]
    score = [s for t in r["truths"] for s in t["true"]]
    return Census(
        n_predictions=r["n"],
        n_bad=r["bad"],
        first_bad=first_bad,
        n_unknown_query_predictions=r["unknown"],
        n_known_queries=r["known_queries"],
        n_repeated_pairs=r["repeats"],
        repeating_query=r["repeating"],
        truth=TrueScores.of(np.array(query, np.int64), np.array(score, np.float64)),
        # + 0.0: a lowest score of -0.0 is reported as 0.0, as the specification does
        bottom=float(r["bottom"]) + 0.0 if r["n"] else float("inf"),
    )


def _first_bad(pairs: DataFrame | None, subs: list[int]) -> dict[int, object]:
    """The earliest bad row (the ``bad`` struct's minimum: ``order`` first) of each of
    ``subs``: one more read of the input, only when a submission has one (the struct
    stays out of the compact rows and the cache)."""
    if not subs or pairs is None:
        return {}
    found = (
        pairs.where(F.col("bad").isNotNull() & F.col(SUBMISSION).isin(subs))
        .groupBy(SUBMISSION)
        .agg(F.min("bad").alias("first_bad"))
        .collect()
    )
    return {r[SUBMISSION]: r["first_bad"] for r in found}
