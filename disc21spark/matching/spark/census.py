"""The checking pass of the distributed plan: counts, bad rows, repeated pairs and the true pairs.

One aggregation in the JVM reads the labelled rows once (it is also the pass that fills
the plan's cache of them). A repeated pair shares its query and its 64-bit pair hash, so
the rows are grouped by (submission, query, a slice of the pair hashes): each group
collects its hashes in a list, and a repeat is a list holding fewer distinct values than
values. Map-side partial aggregation builds those lists where the rows are, so what a
shuffle moves is about the hashes themselves (8 bytes a row, in few records), not a
record per row; the slices (``SLICES``) bound a list to a share of one query's rows.
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

# slices of a query's pair hashes, each collected in a list of its own: a query of 500M
# rows (nothing in the format forbids one) gives lists of 31M hashes, 250 MB, not 4 GB
SLICES = 16


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
    rows: DataFrame, pairs: DataFrame | None = None, partitions: int | None = None
) -> dict[int, Census]:
    """Counts, checks and true pairs of every submission of compact rows
    (``labels.labelled``). ``partitions``: the rows' keys are first shuffled into that
    many partitions by (submission, query) (None: no such shuffle; Spark's adaptive
    execution sizes the aggregation's). ``pairs``: the parsed predictions the rows come
    from, when they need checking: then the rows carry ``bad`` (a boolean) and the first
    bad row of a submission is looked up in ``pairs`` (its ``bad`` struct)."""
    flag = "bad" if pairs is not None else "false"
    keys = rows.selectExpr(SUBMISSION, "query_index", "label", "score", "pair", f"{flag} AS is_bad")
    if partitions:
        # beyond 64 tasks a core, more partitions only add tasks (a value larger than the
        # rows, say, would schedule that many empty ones)
        most = 64 * rows.sparkSession.sparkContext.defaultParallelism
        keys = keys.repartition(min(partitions, most), SUBMISSION, "query_index")
    found = {r[SUBMISSION]: r for r in _per_submission(_per_query(keys)).collect()}
    first_bad = _first_bad(pairs, [s for s, r in found.items() if r["bad"]])
    return {sub: _of(r, first_bad.get(sub)) for sub, r in found.items()}


def _per_query(keys: DataFrame) -> DataFrame:
    """One row per (submission, query): rows, bad rows, lowest score, repeats and the
    scores of its true pairs, summed over slices of its pair hashes (a slice's repeats:
    its list's values less its distinct values)."""
    hashes = "collect_list(pair)"
    slices = aggregated(
        keys,
        [SUBMISSION, "query_index", f"pmod(pair, {SLICES}) AS slice"],
        {
            "n": "count(1)",
            "bad": "count_if(is_bad)",
            "bottom": "min(score)",
            "repeats": f"size({hashes}) - size(array_distinct({hashes}))",
            # collect_list leaves the nulls out: the scores of the true pairs only
            "true": "collect_list(CASE WHEN label THEN score END)",
        },
    )
    return aggregated(
        slices,
        [SUBMISSION, "query_index"],
        {
            "n": "sum(n)",
            "bad": "sum(bad)",
            "bottom": "min(bottom)",
            "repeats": "sum(repeats)",
            "true": "flatten(collect_list(`true`))",
        },
    )


def _per_submission(queries: DataFrame) -> DataFrame:
    """One row per submission from its queries' rows (``_per_query``)."""
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
            "truths": "collect_list(CASE WHEN size(`true`) > 0 "
            "THEN struct(query_index AS q, `true`) END)",
        },
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
