"""The distributed plan of the matching-track metrics.

Shape (after Spark MLlib's BinaryClassificationMetrics): one global range-partitioned
sort by (submission, score desc, label asc), so the pessimistic order of ties holds
across partitions too; one pass over the sorted partitions that keeps, per
(partition, submission), only the pair count, the first and last row numbers and the
row numbers of the true positives; offsets turned into global positions on the
driver. The driver then holds O(partitions + true positives) values, never
O(predictions), and every figure of ``metrics.py`` follows exactly:

* at the k-th true positive, at global position i, precision = k / i and
  recall = k / n_positives; μAP adds (k/P − (k−1)/P) · k/i over the true positives
  (the terms of non-matching rows are exactly zero);
* the best operating point at precision ≥ 0.9 is always at a true positive (the
  precision peaks there), so the true positives alone decide it too.

Before the sort, one census shuffle by query (``census``) gathers what needs a query's
predictions at once: repeated pairs, distinct queries, and the rank of each true pair
behind recall@1/@10 (how many of its query's predictions score at least as high).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from disc21spark.labels import SUBMISSION, is_unknown
from disc21spark.metrics import (
    REQUIRED_PRECISION,
    peak_points,
    recall_at_rank,
    thin_curve,
)
from disc21spark.model import GroundTruth, MatchingMetrics
from disc21spark.phases import Phases

ROWS_PER_PARTITION = 2_000_000


@dataclass(frozen=True)
class SortedRun:
    """What one (partition, submission) run of the sorted data reports to the driver."""

    pid: int
    n: int
    first_row: int
    last_row: int
    top: float
    bottom: float
    match_rows: np.ndarray  # monotonically_increasing_id of the true positives, ascending
    match_scores: np.ndarray


@dataclass(frozen=True)
class QueryStats:
    n_predictions: int
    n_unknown_query_predictions: int
    n_queries_with_predictions: int


@dataclass(frozen=True)
class Census:
    """One submission as the per-query pass sees it, before the sort."""

    n_predictions: int
    n_bad: int
    first_bad: object  # the ``bad`` struct of one bad row, or None
    n_unknown_query_predictions: int
    n_known_queries: int
    n_repeated_pairs: int
    repeating_query: int | None  # qid of a query with a repeated pair hash
    ranks: np.ndarray  # rank (0 = first) of every ground-truth pair that was predicted


EMPTY_CENSUS = Census(0, 0, None, 0, 0, 0, None, np.zeros(0, dtype=np.int64))


def default_partitions(n_rows: int, parallelism: int) -> int:
    return max(2 * parallelism, math.ceil(n_rows / ROWS_PER_PARTITION))


def sort_order() -> list:
    # the tiebreak only spreads huge tie groups (a constant score) over partitions:
    # rows equal on (score, label) are interchangeable for every metric
    return [
        F.col(SUBMISSION).asc(),
        F.col("score").desc(),
        F.col("label").asc(),
        F.col("tiebreak").asc(),
    ]


def sorted_summary(rows: DataFrame, partitions: int) -> DataFrame:
    """The global sort and the single pass over it: one small row per (partition, submission)."""
    order = sort_order()
    ordered = (
        rows.select(SUBMISSION, "score", "label", F.col("pair").alias("tiebreak"))
        .repartitionByRange(partitions, *order)
        .sortWithinPartitions(*order)
        # numbered in the same stage as the sort, so the row number is the sorted position
        .select(
            SUBMISSION,
            "score",
            "label",
            F.spark_partition_id().alias("pid"),
            F.monotonically_increasing_id().alias("row"),
        )
    )
    match = F.when(F.col("label"), F.struct("row", "score"))
    return ordered.groupBy("pid", SUBMISSION).agg(
        F.count(F.lit(1)).alias("n"),
        F.min("row").alias("first_row"),
        F.max("row").alias("last_row"),
        F.max("score").alias("top"),
        F.min("score").alias("bottom"),
        F.sort_array(F.collect_list(match)).alias("matches"),
    )


def sorted_runs(rows: DataFrame, partitions: int) -> dict[int, list[SortedRun]]:
    """Runs per submission, in sorted order, collected from sorted_summary."""
    summary = sorted_summary(rows, partitions)
    runs: dict[int, list[SortedRun]] = {}
    for rec in summary.collect():
        matches = rec["matches"]
        runs.setdefault(rec[SUBMISSION], []).append(
            SortedRun(
                pid=rec["pid"],
                n=rec["n"],
                first_row=rec["first_row"],
                last_row=rec["last_row"],
                top=rec["top"],
                bottom=rec["bottom"],
                match_rows=np.array([m["row"] for m in matches], dtype=np.int64),
                match_scores=np.array([m["score"] for m in matches], dtype=np.float64),
            )
        )
    for sub_runs in runs.values():
        sub_runs.sort(key=lambda run: run.pid)
        _check_runs(sub_runs)
    return runs


def _check_runs(runs: list[SortedRun]) -> None:
    # cheap guards on the two facts the offsets rely on; a failure is our bug, not the user's
    for run in runs:
        if run.last_row - run.first_row + 1 != run.n:
            raise RuntimeError(f"internal error: partition {run.pid} rows are not contiguous")
    for before, after in zip(runs, runs[1:]):
        if before.bottom < after.top:
            raise RuntimeError(
                f"internal error: partitions {before.pid} and {after.pid} are out of order"
            )


def finish(
    runs: list[SortedRun], n_positives: int, max_curve_points: int
) -> tuple[float, tuple, object, int, int]:
    """μAP, P90 operating point, PR curve, true positives and pairs, from one submission's runs."""
    positions: list[np.ndarray] = []
    scores: list[np.ndarray] = []
    offset = 0
    for run in runs:
        positions.append(offset + (run.match_rows - run.first_row) + 1)
        scores.append(run.match_scores)
        offset += run.n
    n_pairs = offset
    pos = np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
    thr = np.concatenate(scores) if scores else np.zeros(0)
    ntp = np.arange(1, len(pos) + 1)
    precision = ntp / pos
    # the same float operations as the specification, term by term
    terms = (ntp / n_positives - (ntp - 1) / n_positives) * precision
    micro_ap = math.fsum(terms)

    valid = np.flatnonzero(precision >= REQUIRED_PRECISION)
    keep = None
    if valid.size:
        best = valid[-1]  # recall grows with k: the last valid peak has the highest
        point = (float(precision[best]), float(ntp[best] / n_positives), float(thr[best]))
        keep = int(best)
    else:
        point = (None, None, None)

    n_tp = len(pos)
    if n_pairs and (n_tp == 0 or pos[-1] != n_pairs):
        ntp = np.append(ntp, n_tp)
        pos = np.append(pos, n_pairs)
        thr = np.append(thr, runs[-1].bottom)
    curve = thin_curve(peak_points(ntp, pos, thr, n_positives), max_curve_points, keep)
    return micro_ap, point, curve, n_tp, n_pairs


def census(rows: DataFrame) -> dict[int, Census]:
    """Counts, checks and true-pair ranks of every submission, from one shuffle by query.

    Grouping by (submission, query) puts together everything that needs a query's
    predictions at once: repeated pairs (a repeat shares the query), the distinct queries,
    and the rank of each true pair (the count of the query's scores ≥ its score).
    The driver receives one row per submission; its ranks list has at most one entry per
    ground-truth pair.
    """
    truth = F.when(F.col("label"), F.col("score"))
    if "bad" not in rows.columns:  # rows that were checked already
        rows = rows.withColumn("bad", F.lit(None).cast("struct<problem:string>"))
    per_query = (
        rows.groupBy(SUBMISSION, "qid")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.count("bad").alias("bad"),
            F.first("bad", ignorenulls=True).alias("first_bad"),
            F.size(F.collect_set("pair")).alias("distinct_pairs"),
            F.collect_list("score").alias("scores"),
            F.collect_list(truth).alias("truths"),
        )
        .select(
            SUBMISSION,
            "qid",
            "n",
            "bad",
            "first_bad",
            (F.col("n") - F.col("distinct_pairs")).alias("repeats"),
            F.transform("truths", lambda t: F.size(F.filter("scores", lambda x: x >= t)) - 1).alias(
                "ranks"
            ),
        )
    )
    unknown = is_unknown(F.col("qid"))
    summary = per_query.groupBy(SUBMISSION).agg(
        F.sum("n").alias("n"),
        F.sum("bad").alias("bad"),
        F.first("first_bad", ignorenulls=True).alias("first_bad"),
        F.sum(F.when(unknown, F.col("n")).otherwise(0)).alias("unknown"),
        F.count(F.when(~unknown, 1)).alias("known_queries"),
        F.sum("repeats").alias("repeats"),
        F.first(F.when(F.col("repeats") > 0, F.col("qid")), ignorenulls=True).alias("repeating"),
        F.flatten(F.collect_list("ranks")).alias("ranks"),
    )
    return {
        r[SUBMISSION]: Census(
            n_predictions=r["n"],
            n_bad=r["bad"],
            first_bad=r["first_bad"],
            n_unknown_query_predictions=r["unknown"],
            n_known_queries=r["known_queries"],
            n_repeated_pairs=r["repeats"],
            repeating_query=r["repeating"],
            ranks=np.array(r["ranks"], dtype=np.int64),
        )
        for r in summary.collect()
    }


def unknown_query_counts(labelled: DataFrame) -> dict[int, int]:
    """Distinct unknown query ids per submission, on the strings (run only when there are some)."""
    return {
        r[SUBMISSION]: r["n"]
        for r in labelled.where(is_unknown(F.col("qid")))
        .groupBy(SUBMISSION)
        .agg(F.countDistinct("query_id").alias("n"))
        .collect()
    }


def query_stats(censuses: dict[int, Census], labelled: DataFrame) -> dict[int, QueryStats]:
    """Pairs, pairs of unknown queries and distinct queries per submission."""
    unknown: dict[int, int] = {}
    if any(c.n_unknown_query_predictions for c in censuses.values()):
        unknown = unknown_query_counts(labelled)
    return {
        sub: QueryStats(
            c.n_predictions,
            c.n_unknown_query_predictions,
            c.n_known_queries + unknown.get(sub, 0),
        )
        for sub, c in censuses.items()
    }


def metrics_from_parts(
    gt: GroundTruth,
    runs: list[SortedRun],
    found_ranks: np.ndarray,
    stats: QueryStats,
    max_curve_points: int,
) -> MatchingMetrics:
    """Assemble one submission's metrics from the plan's small outputs."""
    micro_ap, (p90, r90, t90), curve, n_tp, n_pairs = finish(runs, gt.n_positives, max_curve_points)
    if n_pairs != stats.n_predictions:
        raise RuntimeError(f"internal error: sorted {n_pairs} pairs of {stats.n_predictions}")
    missing = np.full(gt.n_positives - len(found_ranks), -1, dtype=np.int64)
    ranks = np.concatenate([found_ranks, missing])
    return MatchingMetrics(
        micro_ap=micro_ap,
        recall_at_p90=r90,
        threshold_at_p90=t90,
        precision_at_p90=p90,
        recall_at_rank1=recall_at_rank(ranks, 1),
        recall_at_rank10=recall_at_rank(ranks, 10),
        n_predictions=n_pairs,
        n_positives=gt.n_positives,
        n_true_positives=n_tp,
        n_queries=gt.n_queries,
        n_queries_with_predictions=stats.n_queries_with_predictions,
        n_unknown_query_predictions=stats.n_unknown_query_predictions,
        curve=curve,
    )


def score_rows(
    rows: DataFrame,
    gt: GroundTruth,
    partitions: int,
    max_curve_points: int,
    stats: dict[int, QueryStats],
    ranks: dict[int, np.ndarray],
    phases: Phases | None = None,
) -> dict[int, MatchingMetrics]:
    """Metrics of every submission of compact rows (labels.COMPACT_COLUMNS) through the
    sort plan above; ``stats`` and ``ranks`` from the census."""
    phases = phases or Phases()
    with phases.phase("sort") as note:
        runs = sorted_runs(rows, partitions)
        note["rows"] = sum(run.n for sub_runs in runs.values() for run in sub_runs)
        note["detail"] = f"{partitions} range partitions"
    with phases.phase("aggregate") as note:
        empty = np.zeros(0, dtype=np.int64)
        results = {
            sub: metrics_from_parts(
                gt, runs.get(sub, []), ranks.get(sub, empty), sub_stats, max_curve_points
            )
            for sub, sub_stats in stats.items()
        }
        note["rows"] = sum(m.n_true_positives for m in results.values())
        note["detail"] = "true positives"
    return results
