"""The checking pass of the distributed plan: counts, bad rows, repeated pairs and the true pairs.

The slices (below) follow the most rows of one query. A bound on a submission's rows
known before reading (a plain CSV file's size, a search's count) gives them when it
gives few. Else a first job finds that most, filling the plan's cache of the labelled
rows. Then one aggregation in the JVM reads the rows once. A repeated pair shares its
query and its 64-bit pair hash. So the rows are grouped by (submission, query, a slice
of the pair hashes): each group collects its hashes in a list. A repeat is a list
holding fewer distinct values than values. Map-side partial aggregation builds those
lists where the rows are, so what a shuffle moves is about the hashes themselves (8
bytes a row, in few records), not a record per row. The slices bound a list to a share
of one query's rows. There are as few as keep every list about ``LIST_MAX`` long at
most, given the most rows of one query (or the bound): one slice up to 2M rows a query
(DISC21's files have a few hundred).
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

from disc21spark.core.spark import aggregated
from disc21spark.matching.positions import EMPTY, TrueScores
from disc21spark.matching.spark.labels import SUBMISSION

# a query's pair hashes are collected in slices of the hashes, a list each: as few as keep
# every list about LIST_MAX long at most. A list holds its hashes as Java objects: one list of
# a one-query file's 8M rows ran a 1 GB driver out of heap, two of 4M passed. Each slice
# is a group of the aggregation, so one a query is fastest (docs/design.md, "The
# census's slices")
LIST_MAX = 2_000_000
# a bound on a submission's rows known before reading is trusted when it gives at most
# this many slices: then no job counts the most rows of a query first, and the census's
# own job fills the cache. A few slices more cost less than that job; many more cost
# more (docs/design.md, "The census's slices")
BOUND_SLICES = 4


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
    rows_at_most: int | None = None,
) -> dict[int, Census]:
    """Counts, checks and true pairs of every submission of compact rows
    (``labels.labelled``). ``partitions``: the rows' keys are first shuffled into that
    many partitions by (submission, query) (None: no such shuffle; the session's
    shuffle partitions size the aggregation's: adaptive execution, or a small input's
    static plan, ``score.static_plan``). ``pairs``: the parsed predictions the rows come
    from, when they need checking: then the rows carry ``bad`` (a boolean) and the first
    bad row of a submission is looked up in ``pairs`` (its ``bad`` struct). ``list_max``:
    about the longest list of hashes the repeat check collects (``slice_count``).
    ``rows_at_most``: an upper bound on one submission's rows, known before reading
    (None: not known), which may spare the first job (``slices_of``).

    One or two Spark actions read ``rows``: the first finds the most rows of a query
    (``most_rows_of_a_query``) unless the bound spares it, the last is the census.
    Persisted rows (as ``score.score`` persists them) are read from the input once, by
    the first. Raises ValueError when ``list_max`` < 1; Spark's errors reading the input
    pass on."""
    n_slices = slices_of(rows, list_max, rows_at_most)
    keys = rows
    if partitions:
        # beyond 64 tasks a core, more partitions only add tasks (a value larger than the
        # rows, say, would schedule that many empty ones)
        most_partitions = 64 * rows.sparkSession.sparkContext.defaultParallelism
        keys = rows.repartition(min(partitions, most_partitions), SUBMISSION, "query_index")
    is_bad = "bad" if pairs is not None else "false"
    per_query = _per_query(keys, n_slices, is_bad)
    found = {r[SUBMISSION]: r for r in _per_submission(per_query).collect()}
    first_bad = _first_bad(pairs, [s for s, r in found.items() if r["bad"]])
    return {sub: _of(r, first_bad.get(sub)) for sub, r in found.items()}


def most_rows_of_a_query(rows: DataFrame) -> int:
    """The most rows one (submission, query) holds in ``rows`` (0 without rows): a Spark
    action, which fills the cache of persisted rows."""
    per_query = aggregated(rows, [SUBMISSION, "query_index"], {"n": "count(1)"})
    # collect, not first: a limit runs a job per try at the partitions it reads
    ((most,),) = per_query.selectExpr("max(n)").collect()
    return int(most or 0)


def slices_of(rows: DataFrame, list_max: int = LIST_MAX, rows_at_most: int | None = None) -> int:
    """The slices of the census of ``rows``: from ``rows_at_most`` (an upper bound on one
    submission's rows) when it gives at most ``BOUND_SLICES``, else from the most rows of
    a query, counted by a Spark action (``most_rows_of_a_query``). Raises ValueError when
    ``list_max`` < 1."""
    if rows_at_most is not None:
        bounded = slice_count(rows_at_most, list_max)
        if bounded <= BOUND_SLICES:
            return bounded
    return slice_count(most_rows_of_a_query(rows), list_max)


def slice_count(most: int, list_max: int = LIST_MAX) -> int:
    """In how many slices the census collects each query's pair hashes when a query has
    at most ``most`` rows: as few as keep a list at most ``list_max`` long on average,
    at least one. A hash's remainder splits a query's rows about evenly. Every copy of
    a pair goes to one list, whatever the slices. Raises ValueError when ``list_max`` < 1."""
    if list_max < 1:
        raise ValueError(f"list_max must be at least 1, not {list_max}")
    return max(1, -(-most // list_max))


def _per_query(keys: DataFrame, n_slices: int, is_bad: str) -> DataFrame:
    """One row per (submission, query) of compact rows ``keys``: rows, bad rows (those
    where ``is_bad``, SQL text, holds), lowest score, repeats and the scores of its true
    pairs, the pair hashes collected in ``n_slices`` lists. SQL text, parsed by Spark: a
    Column built in Python costs a py4j call a step (issue 47)."""
    slice_keys = [SUBMISSION, "query_index", f"pmod(pair, {int(n_slices)}) AS slice"]
    sliced = aggregated(
        keys,
        slice_keys,
        {
            "n": "count(1)",
            "bad": f"count_if({is_bad})",
            "bottom": "min(score)",
            # Spark collects the list once for both terms (equal aggregates are merged)
            "repeats": "size(collect_list(pair)) - size(array_distinct(collect_list(pair)))",
            # collect_list leaves the nulls out: the scores of the true pairs only
            "true_scores": "collect_list(CASE WHEN label THEN score END)",
        },
    )
    return aggregated(
        sliced,
        [SUBMISSION, "query_index"],
        {
            "n": "sum(n)",
            "bad": "sum(bad)",
            "bottom": "min(bottom)",
            "repeats": "sum(repeats)",
            "true_scores": "flatten(collect_list(true_scores))",
        },
    )


def _per_submission(queries: DataFrame) -> DataFrame:
    """One row per submission from its queries' rows (``_per_query``)."""
    truths = "struct(query_index AS q, true_scores)"
    return aggregated(
        queries,
        [SUBMISSION],
        {
            "n": "sum(n)",
            "bad": "sum(bad)",
            "unknown": "sum(CASE WHEN NOT (query_index >= 0) THEN n ELSE 0 END)",
            "known_queries": "count_if(query_index >= 0)",
            "repeats": "sum(repeats)",
            "repeating": "min(CASE WHEN repeats > 0 THEN query_index END)",
            "bottom": "min(bottom)",
            "truths": f"collect_list(CASE WHEN size(true_scores) > 0 THEN {truths} END)",
        },
    )


def _of(r, first_bad) -> Census:
    """A submission's Census from its ``_per_submission`` row."""
    query = [t["q"] for t in r["truths"] for _ in t["true_scores"]]
    score = [s for t in r["truths"] for s in t["true_scores"]]
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
