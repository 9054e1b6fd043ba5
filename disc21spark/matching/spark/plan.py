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
2. ``counts_of``: one Spark job counts the non-matching rows per (submission, bucket),
   and per (submission, query, bucket) for the queries holding a true pair
   (``misses_by_query``); joined with the true pairs on (submission, query) (a broadcast
   hash join), from each true pair's own bucket up, and with the true pairs of its query
   scoring as high added, those give the rank behind recall@1/@10. With intervals, the
   non-matches of every query are counted per bucket once and kept on local disk
   (``QueryBuckets``): both sums come from them, and the bootstrap weighs them and reads
   no row again. A small input's (``score.DRIVER_ROWS``) are counted per bucket in every
   case and collected, and the driver takes both sums from them (``positions.ranks_ge``
   weighed by the counts);
3. the driver turns the few counts (buckets and true pairs, never rows) into positions,
   and ``positions.finish`` into figures, term by term as ``spec.py`` does.

No row crosses into Python (but a small input's counts per query) and no row is
shuffled: the aggregations shuffle their partial counts only. Integer counts add up the
same in any order, so the figures are the same bits for any number of partitions; tests
hold them equal to the specification.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from disc21spark.core.phases import Phases
from disc21spark.core.spark import aggregated, spark_conf
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
        """The grid of the true scores of every submission of ``truths``."""
        levels = [t.ascending for t in truths.values()]
        levels = np.unique(np.concatenate(levels or [[]]).astype(np.float64) + 0.0)
        above = np.nextafter(levels, np.inf)
        return cls(np.unique(np.concatenate([[-np.inf], levels, above, [np.inf]])))

    def bucketed(self, rows: DataFrame) -> DataFrame:
        """``rows`` with ``bucket`` (double) from a Bucketizer whose splits travel to the
        JVM as bytes in one call (not one py4j call a split); without a true score there is
        one bucket, 0 (and a Bucketizer needs two). The JVM's Bucketizer itself, each class
        looked up by its whole name: pyspark.ml's wrapper sets its parameters a py4j call
        at a time (35 calls against 10, issue 47)."""
        if len(self.splits) <= 2:
            return rows.selectExpr("*", "0D AS bucket")
        spark = rows.sparkSession
        gateway = spark.sparkContext._gateway
        splits = gateway.new_array(gateway.jvm.double, len(self.splits))
        data = bytearray(self.splits.astype(">f8").tobytes())
        getattr(gateway.jvm, "java.nio.ByteBuffer").wrap(data).asDoubleBuffer().get(splits)
        bucketizer = getattr(gateway.jvm, "org.apache.spark.ml.feature.Bucketizer")()
        bucketizer.setInputCol("score").setOutputCol("bucket").setHandleInvalid("keep")
        return DataFrame(bucketizer.setSplits(splits).transform(rows._jdf), spark)

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
CACHED_PARTITIONS = "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"


@dataclass
class QueryBuckets:
    """The non-matching rows counted per (submission, query, bucket of ``grid``):
    ``frame`` is ``misses_by_query``'s, filled by the counting job. The bootstrap weighs
    these counts, so it does not read the rows again (issue 47). A large input's are
    persisted on local disk; a small input's (``on_driver``) are collected by that job
    into ``table`` (pyarrow, at most a row per input row) and summed and weighed on the
    driver. Whoever makes one releases it (``release``)."""

    frame: DataFrame
    grid: Grid
    on_driver: bool = False
    table: Any = None  # a small input's counts, once the counting job collected them

    @classmethod
    def of(
        cls, rows: DataFrame, censuses: dict[int, Census], on_driver: bool = False
    ) -> QueryBuckets:
        """The counts of compact ``rows`` on the grid of ``censuses``' true scores, to be
        filled by ``counts_of`` (persisting is lazy: nothing is read here); collected
        when ``on_driver`` (a small input of few rows: ``score._kept_counts``)."""
        grid = Grid.of({s: c.truth for s, c in censuses.items()})
        if on_driver:
            return cls(misses_by_query(rows, grid), grid, on_driver)
        # sized by adaptive execution when it is on (a large input), as any aggregation's
        # output is (else a cached plan keeps the session's shuffle partitions: 16 small
        # ones here, each weighing its queries' counts on its own); read when the cache
        # is defined
        with spark_conf(rows.sparkSession, {CACHED_PARTITIONS: "true"}):
            frame = misses_by_query(rows, grid).persist(StorageLevel.DISK_ONLY)
        return cls(frame, grid, on_driver)

    def columns(self) -> tuple[np.ndarray, ...]:
        """A collected ``table``'s columns: submission, query_index, bucket, n."""
        return tuple(c.to_numpy(zero_copy_only=False) for c in self.table.columns)

    def release(self) -> None:
        self.table = None
        if not self.on_driver:
            self.frame.unpersist()


@dataclass(frozen=True)
class Counted:
    """What the counting job found: each submission's Counts and optimistic bucket
    counts (``RankedTruth``), int64 (T,) each."""

    totals: dict[int, Counts]
    optimistic: dict[int, np.ndarray]


def _missed(rows: DataFrame, grid: Grid) -> DataFrame:
    """The non-matching rows of compact ``rows`` with their ``bucket`` of ``grid``. + 0.0:
    -0.0 ties with 0.0 (the Bucketizer's binary search would put it below)."""
    missed = rows.where("NOT label").selectExpr(SUBMISSION, "query_index", "score + 0.0D AS score")
    return grid.bucketed(missed)


def misses_by_query(rows: DataFrame, grid: Grid) -> DataFrame:
    """The non-matching rows of compact ``rows`` counted per (submission, query_index,
    bucket of ``grid``): ``submission int, query_index long, bucket int, n long``."""
    keys = [SUBMISSION, "query_index", "CAST(bucket AS INT) AS bucket"]
    return aggregated(_missed(rows, grid), keys, {"n": "count(1)"})


def counted(
    rows: DataFrame, grid: Grid, truths: dict[int, TrueScores], kept: DataFrame | None = None
) -> DataFrame:
    """One frame of COUNTED: (submission, MISSES, bucket, non-matching rows) and
    (submission, RANKS, true pair j of its ``truths``, non-matching rows of its query
    scoring ≥ it), both from the non-matches per query (``misses_by_query``): ``kept``
    (all of them, already counted on ``grid``), else counted here from ``rows``, where
    the ranks need only the queries holding a true pair. SQL text, parsed by Spark."""
    at_bucket = [SUBMISSION, "CAST(bucket AS BIGINT) AS at"]
    pairs = _true_pairs_table(rows.sparkSession, grid, truths)
    by_query = kept
    if kept is None:
        misses = aggregated(_missed(rows, grid), at_bucket, {"n": "count(1)"})
        if pairs is not None:
            mine = rows.join(F.broadcast(pairs), [SUBMISSION, "query_index"], "left_semi")
            by_query = misses_by_query(mine, grid)
    else:
        misses = aggregated(kept, at_bucket, {"n": "sum(n)"})
    misses = misses.selectExpr(SUBMISSION, f"{MISSES} AS kind", "at", "n")
    if pairs is None:
        return misses
    # a broadcast hash join with the true pairs on (submission, query): a query's buckets
    # from its true pair's own up (a bucket that starts at a true score holds it alone)
    joined = by_query.join(F.broadcast(pairs), [SUBMISSION, "query_index"])
    reached = aggregated(
        joined.where("bucket >= at_bucket"), [SUBMISSION, "j AS at"], {"n": "sum(n)"}
    )
    reached = reached.selectExpr(SUBMISSION, f"{RANKS} AS kind", "at", "n")
    return misses.unionByName(reached)


def _true_pairs_table(spark, grid: Grid, truths: dict[int, TrueScores]) -> DataFrame | None:
    """Every true pair as (submission, query_index, at_bucket: the grid's bucket of its
    score, j), built from Arrow in one call; None without any."""
    import pyarrow as pa

    subs = [s for s, t in truths.items() if len(t)]
    if not subs:
        return None
    scores = np.concatenate([truths[s].score for s in subs])
    table = pa.table(
        {
            SUBMISSION: pa.array(np.repeat(subs, [len(truths[s]) for s in subs]), pa.int32()),
            "query_index": pa.array(np.concatenate([truths[s].query for s in subs]), pa.int64()),
            "at_bucket": pa.array(np.searchsorted(grid.splits, scores), pa.int32()),
            "j": pa.array(np.concatenate([np.arange(len(truths[s])) for s in subs]), pa.int64()),
        }
    )
    return spark.createDataFrame(table)


def counts_of(
    rows: DataFrame, censuses: dict[int, Census], kept: QueryBuckets | None = None
) -> Counted:
    """Every submission's Counts, and its optimistic bucket counts (``RankedTruth``), from
    one Spark job over compact ``rows`` (``labels.labelled``) against the true pairs of
    ``censuses``. ``kept``: the counts per query on the same grid (``QueryBuckets.of``),
    which this job fills and both sums come from."""
    truths = {s: c.truth for s, c in censuses.items()}
    grid = kept.grid if kept is not None else Grid.of(truths)
    buckets = {s: np.zeros(len(grid.splits) - 1, np.int64) for s in censuses}
    # the true pairs of a pair's query scoring as high, itself included; the non-matches
    # come from the job
    ranks_ge = {s: positions.ranks_ge(t, t.query, t.score) for s, t in truths.items()}
    if kept is not None and kept.on_driver:
        kept.table = kept.frame.toArrow()
        _sum_collected(kept, truths, buckets, ranks_ge)
    else:
        for r in counted(rows, grid, truths, kept.frame if kept else None).collect():
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
    return Counted(totals, optimistic)


def _sum_collected(kept: QueryBuckets, truths: dict, buckets: dict, ranks_ge: dict) -> None:
    """``counted``'s two sums from a small input's counts per query (``kept.table``),
    added to ``buckets`` (submission -> int64 (buckets,)) and ``ranks_ge`` (submission ->
    int64 (true pairs,)): the rows per bucket, and per true pair its query's non-matches
    from its bucket up, counted by the in-process engine's kernel (a bucket's rows stand
    at its lower split, and every true score is one)."""
    sub, query, bucket, n = kept.columns()
    for s, truth in truths.items():
        mine = sub == s
        at, many = bucket[mine], n[mine]
        size = len(buckets[s])
        buckets[s] += np.bincount(at, weights=many, minlength=size).astype(np.int64)
        ranks_ge[s] += positions.ranks_ge(truth, query[mine], kept.grid.splits[at], many)


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


def count_phase(
    rows: DataFrame, censuses: dict[int, Census], kept: QueryBuckets | None, phases: Phases
) -> Counted:
    """The count phase: ``counts_of`` over compact rows (``labels.labelled``) against the
    census's true pairs, filling ``kept`` (the bootstrap's counts per query) if given."""
    with phases.phase("count") as note:
        found = counts_of(rows, censuses, kept)
        note["rows"] = sum(c.n for c in found.totals.values())
        true_scores = sum(len(c.truth.ascending) for c in censuses.values())
        note["detail"] = f"rows bucketed in the JVM against {true_scores:,} true scores" + (
            ", no row shuffled"
            if kept is None
            else ", counted per query and summed on the driver"
            if kept.on_driver
            else ", counted per query for the bootstrap"
        )
    return found


def aggregate_phase(
    truths: dict[int, GroundTruth],
    max_curve_points: int,
    stats: dict[int, QueryStats],
    censuses: dict[int, Census],
    found: Counted,
    phases: Phases,
) -> tuple[dict[int, MatchingMetrics], dict[int, RankedTruth]]:
    """Metrics of every submission of ``censuses`` (its true pairs, rows and lowest
    score) from the counting job's ``found``; ``stats`` from the census. ``truths``: each
    submission's ground truth (the one its rows were labelled on, or its own part of it:
    rank evaluation scores each test alone, and the labels are the same). Also each
    submission's true pairs with their ranks, which the bootstrap needs."""
    with phases.phase("aggregate") as note:
        results, ranked = {}, {}
        for sub, sub_stats in stats.items():
            truth, counts = censuses[sub].truth, found.totals[sub]
            results[sub] = metrics_from_parts(
                truths[sub], truth, counts, sub_stats, max_curve_points
            )
            ranks = positions.ranks(counts)
            ranked[sub] = RankedTruth(
                truth.query, truth.score, ranks, found.optimistic[sub], counts.misses_ge
            )
        note["rows"] = sum(m.n_true_positives for m in results.values())
        note["detail"] = "true positives"
    return results, ranked
