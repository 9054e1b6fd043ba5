"""The distributed plan of the matching-track metrics: global positions by counting.

The contract (after Spark MLlib's BinaryClassificationMetrics) is one global sort of all
pairs by decreasing score, non-matching pairs first among equal scores (the pessimistic
order), and cumulative counts along it. This plan computes exactly those global positions
without moving the rows: μAP, the P90 operating point and the curve need only the
position of each true pair, and that position is a count (``positions.py``): the k-th true
pair by decreasing score sits at k + the non-matching pairs scoring at least as high. So

1. ``census.census``: one pass over the labelled rows for the checks and counts (bad rows,
   pairs, unknown queries, distinct queries, repeated pairs), with its own shuffle of the
   rows' keys only (submission, query, pair hash), sorted per partition in numpy;
2. ``true_scores``: the true pairs (at most one per ground-truth pair per submission: the
   checks reject repeats) collected to the driver and broadcast;
3. ``counted``: every partition counts its rows against them in numpy over Arrow batches
   (``mapInArrow``): per submission its rows, lowest score, non-matching rows scoring ≥
   each true score, and per true pair its query's rows scoring ≥ it (recall@1/@10);
4. the driver adds the partitions' integer counts (one row per partition and submission)
   and ``positions.finish`` turns positions into figures, term by term as ``spec.py`` does.

The driver holds O(partitions + true pairs) values, never O(predictions); no row is
shuffled but the pair hashes of the repeat check. The figures of ``metrics.py`` follow:

* at the k-th true positive, at global position i, precision = k / i and
  recall = k / n_positives; μAP adds (k/P − (k−1)/P) · k/i over the true positives
  (the terms of non-matching rows are exactly zero);
* the best operating point at precision ≥ 0.9 is always at a true positive (the
  precision peaks there), so the true positives alone decide it too.

Integer counts add up the same in any order, so the figures are the same bits for any
number of partitions; tests hold them equal to the specification.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from disc21spark.core.phases import Phases
from disc21spark.matching import positions
from disc21spark.matching.census import Census
from disc21spark.matching.labels import SUBMISSION
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.positions import Counts, QueryStats, TrueScores, metrics_from_parts


def true_scores(rows: DataFrame) -> dict[int, TrueScores]:
    """The predicted true pairs of every submission (query index, score), from the driver's
    side: at most one per ground-truth pair per submission once repeats are rejected."""
    table = rows.where(F.col("label")).select(SUBMISSION, "query_index", "score").toArrow()
    sub = table.column(SUBMISSION).to_numpy()
    query = table.column("query_index").to_numpy()
    score = table.column("score").to_numpy()
    order = np.argsort(sub, kind="stable")
    sub, query, score = sub[order], query[order], score[order]
    heads = np.flatnonzero(np.r_[True, sub[1:] != sub[:-1]]) if len(sub) else np.zeros(0, int)
    ends = np.r_[heads[1:], len(sub)]
    return {int(sub[a]): TrueScores.of(query[a:b], score[a:b]) for a, b in zip(heads, ends)}


@dataclass(frozen=True)
class TruePairs:
    """One submission's predicted true pairs, sorted by (query, score): int64 query
    indices, float64 scores and int64 ranks (how many of the query's predictions score at
    least as high, the pair itself excluded: 0 = first)."""

    query: np.ndarray
    score: np.ndarray
    rank: np.ndarray


COUNT_SCHEMA = "submission int, n long, bottom double, misses_ge array<long>, ranks_ge array<long>"


def counted(rows: DataFrame, truth) -> DataFrame:
    """One row per (partition, submission): its counts against the broadcast ``truth``
    (a Broadcast of dict[int, TrueScores]); no shuffle."""
    columns = rows.select(SUBMISSION, "query_index", "label", "score")
    return columns.mapInArrow(lambda batches: count_partition(batches, truth.value), COUNT_SCHEMA)


def count_partition(batches, truth: dict[int, TrueScores]):
    """The counts of one partition's rows, per submission (runs on the executors)."""
    import pyarrow as pa

    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    table = pa.concat_tables(tables).combine_chunks()
    sub = table.column(SUBMISSION).to_numpy()
    query = table.column("query_index").to_numpy()
    label = table.column("label").to_numpy(zero_copy_only=False)
    score = table.column("score").to_numpy()
    if np.any(sub[1:] < sub[:-1]):  # a pool's partition may mix submissions
        order = np.argsort(sub, kind="stable")
        sub, query, label, score = sub[order], query[order], label[order], score[order]
    heads = np.flatnonzero(np.r_[True, sub[1:] != sub[:-1]])
    for a, b in zip(heads, np.r_[heads[1:], len(sub)]):
        found = positions.count_rows(
            truth.get(int(sub[a]), positions.EMPTY), query[a:b], label[a:b], score[a:b]
        )
        yield pa.RecordBatch.from_arrays(
            [
                pa.array([sub[a]], pa.int32()),
                pa.array([found.n], pa.int64()),
                pa.array([found.bottom], pa.float64()),
                pa.array([found.misses_ge], pa.list_(pa.int64())),
                pa.array([found.ranks_ge], pa.list_(pa.int64())),
            ],
            schema=pa.schema(
                [
                    (SUBMISSION, pa.int32()),
                    ("n", pa.int64()),
                    ("bottom", pa.float64()),
                    ("misses_ge", pa.list_(pa.int64())),
                    ("ranks_ge", pa.list_(pa.int64())),
                ]
            ),
        )


def added_counts(rows: DataFrame, truth, truths: dict[int, TrueScores]) -> dict[int, Counts]:
    """Every submission's counts, the partitions' added on the driver."""
    totals: dict[int, Counts] = {}
    for r in counted(rows, truth).collect():
        sub = r[SUBMISSION]
        part = Counts(
            r["n"],
            r["bottom"],
            np.array(r["misses_ge"], np.int64),
            np.array(r["ranks_ge"], np.int64),
        )
        if sub not in totals:
            totals[sub] = Counts.zero(truths.get(sub, positions.EMPTY))
        totals[sub].add(part)
    return totals


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
    gt: GroundTruth,
    max_curve_points: int,
    stats: dict[int, QueryStats],
    truths: dict[int, TrueScores],
    phases: Phases | None = None,
    gt_of: dict[int, GroundTruth] | None = None,
) -> tuple[dict[int, MatchingMetrics], dict[int, TruePairs]]:
    """Metrics of every submission of compact rows (labels.encoded) by counting positions
    against ``truths`` (from ``true_scores``); ``stats`` from the census. ``gt_of``: a
    submission's own ground truth when it answers only part of ``gt`` (rank evaluation
    scores each test alone; the labels, from ``gt``, are the same). Also each
    submission's true pairs with their ranks, which the bootstrap needs again."""
    gt_of = gt_of or {}
    phases = phases or Phases()
    with phases.phase("sort") as note:
        spark = rows.sparkSession
        shipped = spark.sparkContext.broadcast(truths)
        try:
            totals = added_counts(rows, shipped, truths)
        finally:
            shipped.unpersist()
        note["rows"] = sum(c.n for c in totals.values())
        note["detail"] = (
            f"global positions counted in {rows.rdd.getNumPartitions()} partitions against "
            f"{sum(len(t) for t in truths.values()):,} true scores, no shuffle"
        )
    with phases.phase("aggregate") as note:
        results, ranked = {}, {}
        for sub, sub_stats in stats.items():
            truth = truths.get(sub, positions.EMPTY)
            counts = totals.get(sub) or Counts.zero(truth)
            results[sub] = metrics_from_parts(
                gt_of.get(sub, gt), truth, counts, sub_stats, max_curve_points
            )
            ranked[sub] = TruePairs(truth.query, truth.score, positions.ranks(counts))
        note["rows"] = sum(m.n_true_positives for m in results.values())
        note["detail"] = "true positives"
    return results, ranked
