"""The distributed plan of the matching-track metrics: global positions by counting, in the JVM.

The contract (after Spark MLlib's BinaryClassificationMetrics) is one global sort of all
pairs by decreasing score, non-matching pairs first among equal scores (the pessimistic
order), and cumulative counts along it. This plan computes exactly those global positions
without sorting or moving the rows: μAP, the P90 operating point and the curve need only
the position of each true pair, and that position is a count (``positions.py``): the k-th
true pair by decreasing score sits at k + the non-matching pairs scoring at least as high.
So, after ``census.census`` (the checks, and each submission's true pairs):

1. ``Grid``: the true scores of every submission, and the smallest double above each,
   as the splits of one Spark ML ``Bucketizer`` (a binary search per row in the JVM): a
   row's bucket says which true scores it reaches and whether it ties one;
2. ``counted``: one Spark job, two aggregations: the non-matching rows per (submission,
   bucket), and for each true pair the rows of its query scoring at least as high (a
   broadcast hash join of the rows with the true pairs on (submission, query)): the
   rank behind recall@1/@10;
3. the driver turns the few counts (buckets and true pairs, never rows) into positions,
   and ``positions.finish`` into figures, term by term as ``spec.py`` does.

No row crosses into Python and no row is shuffled: the aggregations shuffle their
partial counts only. Integer counts add up the same in any order, so the figures are the
same bits for any number of partitions; tests hold them equal to the specification.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from disc21spark.core.phases import Phases
from disc21spark.core.spark import aggregated
from disc21spark.matching import positions
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.positions import Counts, QueryStats, TrueScores, metrics_from_parts
from disc21spark.matching.spark.census import Census
from disc21spark.matching.spark.labels import SUBMISSION


@dataclass(frozen=True)
class RankedTruth:
    """One submission's predicted true pairs, sorted by (query, score): int64 query
    indices, float64 scores and int64 ranks (how many of the query's predictions score at
    least as high, the pair itself excluded: 0 = first); and ``optimistic``, int64 (T,):
    the non-matches in each optimistic bucket of the levels taken decreasing (the first
    level a score is strictly ahead of: ``stats.weighted.miss_counts``'s second count),
    which the optimistic μAP needs;
    ``misses_ge``, int64 (T,): the non-matches scoring at least each true score,
    ascending (``positions.Counts``), which the per-query table needs."""

    query: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    optimistic: np.ndarray
    misses_ge: np.ndarray


@dataclass(frozen=True)
class Grid:
    """The buckets every row's score falls in: ``splits``, float64, strictly increasing,
    -inf first and +inf last, holding every true score of every submission and the
    smallest double above each. A bucket is [splits[b], splits[b + 1]); one that starts
    at a true score holds that score only."""

    splits: np.ndarray

    @classmethod
    def of(cls, truths: dict[int, TrueScores]) -> Grid:
        return cls.of_levels([t.ascending for t in truths.values()])

    @classmethod
    def of_levels(cls, levels: list[np.ndarray]) -> Grid:
        """The grid of the true scores of every array of ``levels`` (float64, any order)."""
        levels = np.unique(np.concatenate(levels or [[]]).astype(np.float64) + 0.0)
        above = np.nextafter(levels, np.inf)
        return cls(np.unique(np.concatenate([[-np.inf], levels, above, [np.inf]])))

    def bucketed(self, rows: DataFrame) -> DataFrame:
        """``rows`` with ``bucket`` (double) from a Bucketizer whose splits travel to the
        JVM as bytes in one call (not one py4j call a split)."""
        from pyspark.ml.feature import Bucketizer

        spark = rows.sparkSession
        gateway = spark.sparkContext._gateway
        splits = gateway.new_array(gateway.jvm.double, len(self.splits))
        data = bytearray(self.splits.astype(">f8").tobytes())
        gateway.jvm.java.nio.ByteBuffer.wrap(data).asDoubleBuffer().get(splits)
        bucketizer = Bucketizer(inputCol="score", outputCol="bucket", handleInvalid="keep")
        bucketizer._java_obj.setSplits(splits)
        return bucketizer.transform(rows)

    def at_least(self, ascending: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """int64: for each of ``ascending`` (true scores, all in the grid), the rows of
        ``counts`` (per bucket) scoring at least as high."""
        ge = np.cumsum(counts[::-1])[::-1]
        return ge[np.searchsorted(self.splits, ascending)].astype(np.int64)

    def above(self, ascending: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """int64: for each of ``ascending``, the rows of ``counts`` scoring higher (the
        bucket after a level's own holds the smallest double above it)."""
        ge = np.append(np.cumsum(counts[::-1])[::-1], 0)
        return ge[np.searchsorted(self.splits, ascending) + 1].astype(np.int64)


COUNTED = f"{SUBMISSION} int, kind int, at long, n long"
MISSES, RANKS = 0, 1  # the two kinds of counts ``counted`` returns


def counted(rows: DataFrame, grid: Grid, truths: dict[int, TrueScores]) -> DataFrame:
    """One frame of COUNTED: (submission, MISSES, bucket, non-matching rows) and
    (submission, RANKS, true pair j of its ``truths``, rows of its query scoring ≥ it).
    Expressions as SQL text, parsed by Spark in one call each (issue 47)."""
    # + 0.0: -0.0 ties with 0.0 (the Bucketizer's binary search would put it below)
    scored = rows.selectExpr(SUBMISSION, "query_index", "label", "score + 0.0D AS score")
    missed = scored.where("NOT label")
    # without a true score anywhere there is one bucket (and a Bucketizer needs two)
    missed = (
        grid.bucketed(missed) if len(grid.splits) > 2 else missed.selectExpr("*", "0 AS bucket")
    )
    at_bucket = [SUBMISSION, "CAST(bucket AS BIGINT) AS at"]
    misses = aggregated(missed, at_bucket, {"n": "count(1)"})
    misses = misses.selectExpr(SUBMISSION, f"{MISSES} AS kind", "at", "n")
    pairs = _true_pairs_table(rows.sparkSession, truths)
    if pairs is None:
        return misses
    # a broadcast hash join with the true pairs on (submission, query)
    joined = scored.join(F.broadcast(pairs), [SUBMISSION, "query_index"])
    reached = aggregated(
        joined.where("score >= true_score"), [SUBMISSION, "j AS at"], {"n": "count(1)"}
    )
    reached = reached.selectExpr(SUBMISSION, f"{RANKS} AS kind", "at", "n")
    return misses.unionByName(reached)


def _true_pairs_table(spark, truths: dict[int, TrueScores]) -> DataFrame | None:
    """Every true pair as (submission, query_index, true_score, j), built from Arrow in one
    call; None without any."""
    import pyarrow as pa

    subs = [s for s, t in truths.items() if len(t)]
    if not subs:
        return None
    table = pa.table(
        {
            SUBMISSION: pa.array(np.repeat(subs, [len(truths[s]) for s in subs]), pa.int32()),
            "query_index": pa.array(np.concatenate([truths[s].query for s in subs]), pa.int64()),
            "true_score": pa.array(np.concatenate([truths[s].score for s in subs]), pa.float64()),
            "j": pa.array(np.concatenate([np.arange(len(truths[s])) for s in subs]), pa.int64()),
        }
    )
    return spark.createDataFrame(table)


def counts_of(
    rows: DataFrame, censuses: dict[int, Census]
) -> tuple[dict[int, Counts], dict[int, np.ndarray]]:
    """Every submission's Counts, and its optimistic bucket counts (``RankedTruth``), from
    one Spark job over ``rows`` against the true pairs of ``censuses``."""
    truths = {s: c.truth for s, c in censuses.items()}
    grid = Grid.of(truths)
    buckets = {s: np.zeros(len(grid.splits) - 1, np.int64) for s in censuses}
    ranks_ge = {s: np.zeros(len(t), np.int64) for s, t in truths.items()}
    for r in counted(rows, grid, truths).collect():
        target = buckets if r["kind"] == MISSES else ranks_ge
        target[r[SUBMISSION]][r["at"]] += r["n"]
    totals, optimistic = {}, {}
    for s, c in censuses.items():
        ascending = truths[s].ascending
        misses_ge = grid.at_least(ascending, buckets[s])
        totals[s] = Counts(c.n_predictions, c.bottom, misses_ge, ranks_ge[s])
        # the optimistic bucket i (levels decreasing) holds the scores in (l_i, l_(i-1)]
        higher = grid.above(ascending, buckets[s])[::-1]
        optimistic[s] = np.diff(np.r_[0, higher]).astype(np.int64)
    return totals, optimistic


def unknown_query_counts(pairs: DataFrame, gt: GroundTruth) -> dict[int, int]:
    """Distinct unknown query ids per submission of string ``pairs``, on the strings (a
    hash could merge two ids; run only when there are some)."""
    spark = pairs.sparkSession
    known = spark.createDataFrame([(str(q),) for q in gt.query_ids], "query_id string")
    return {
        r[SUBMISSION]: r["n"]
        for r in pairs.join(F.broadcast(known), "query_id", "left_anti")
        .groupBy(SUBMISSION)
        .agg(F.countDistinct("query_id").alias("n"))
        .collect()
    }


def query_stats(
    censuses: dict[int, Census], pairs: DataFrame, gt: GroundTruth
) -> dict[int, QueryStats]:
    """Pairs, pairs of unknown queries and distinct queries per submission."""
    unknown: dict[int, int] = {}
    if any(c.n_unknown_query_predictions for c in censuses.values()):
        unknown = unknown_query_counts(pairs, gt)
    return {
        sub: QueryStats(
            c.n_predictions,
            c.n_unknown_query_predictions,
            c.n_known_queries + unknown.get(sub, 0),
        )
        for sub, c in censuses.items()
    }


def score_rows(
    rows: DataFrame,
    truths: dict[int, GroundTruth],
    max_curve_points: int,
    stats: dict[int, QueryStats],
    censuses: dict[int, Census],
    phases: Phases | None = None,
) -> tuple[dict[int, MatchingMetrics], dict[int, RankedTruth]]:
    """Metrics of every submission of ``censuses`` (its true pairs, rows and lowest
    score) from compact rows (``labels.labelled``) by counting positions; ``stats`` from
    the census. ``truths``: each submission's ground truth (the one its rows were
    labelled on, or its own part of it: rank evaluation scores each test alone, and the
    labels are the same). Also each submission's true pairs with their ranks, which the
    bootstrap needs."""
    phases = phases or Phases()
    with phases.phase("count") as note:
        totals, optimistic = counts_of(rows, censuses)
        note["rows"] = sum(c.n for c in totals.values())
        note["detail"] = (
            f"rows bucketed in the JVM against "
            f"{sum(len(c.truth.ascending) for c in censuses.values()):,} true scores, no row shuffled"
        )
    with phases.phase("aggregate") as note:
        results, ranked = {}, {}
        for sub, sub_stats in stats.items():
            truth = censuses[sub].truth
            results[sub] = metrics_from_parts(
                truths[sub], truth, totals[sub], sub_stats, max_curve_points
            )
            ranks = positions.ranks(totals[sub])
            counts = totals[sub]
            ranked[sub] = RankedTruth(
                truth.query, truth.score, ranks, optimistic[sub], counts.misses_ge
            )
        note["rows"] = sum(m.n_true_positives for m in results.values())
        note["detail"] = "true positives"
    return results, ranked
