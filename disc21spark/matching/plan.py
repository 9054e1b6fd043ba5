"""The distributed plan of the matching-track metrics.

Shape (after Spark MLlib's BinaryClassificationMetrics): pairs are first counted per
(submission, score) — matching and non-matching — since pairs of equal score are
ordered only by label (non-matches first, the pessimistic order) and are otherwise
interchangeable; one global range-partitioned sort of those score groups by
(submission, score desc); one local pass over each sorted partition (Arrow) that turns
counts into cumulative counts and keeps, per (partition, submission), the pair count
and the score groups holding true pairs; offsets turned into global positions on the
driver. The driver then holds O(partitions + true positives) values, never
O(predictions), and every figure of ``metrics.py`` follows exactly:

* at the k-th true positive, at global position i, precision = k / i and
  recall = k / n_positives; μAP adds (k/P − (k−1)/P) · k/i over the true positives
  (the terms of non-matching rows are exactly zero);
* the best operating point at precision ≥ 0.9 is always at a true positive (the
  precision peaks there), so the true positives alone decide it too.

Before the sort, one census shuffle by query (``census``) gathers what needs a query's
predictions at once: repeated pairs, distinct queries, and the rank of each true pair
behind recall@1/@10 (how many of its query's predictions score at least as high). A
census without per-query lists was built and measured slower here (README, "What was
tried"): this one stays until a plan measures faster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from disc21spark.core.phases import Phases
from disc21spark.matching.labels import SUBMISSION, is_unknown
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.spec import (
    REQUIRED_PRECISION,
    assemble,
    peak_points,
    thin_curve,
)

ROWS_PER_PARTITION = 2_000_000


@dataclass(frozen=True)
class SortedRun:
    """What one (partition, submission) run of the sorted score groups reports to the driver."""

    pid: int
    n: int  # predictions in the run
    top: float
    bottom: float
    rows_before: np.ndarray  # for each score group holding true pairs: run rows ahead of it
    misses: np.ndarray  # its non-matching pairs (they come first: pessimistic order)
    hits: np.ndarray  # its true pairs
    scores: np.ndarray


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
    repeating_query: int | None  # index of a query with a repeated pair hash
    ranks: np.ndarray  # rank (0 = first) of every ground-truth pair that was predicted


EMPTY_CENSUS = Census(0, 0, None, 0, 0, 0, None, np.zeros(0, dtype=np.int64))


def default_partitions(n_rows: int, parallelism: int) -> int:
    return max(2 * parallelism, math.ceil(n_rows / ROWS_PER_PARTITION))


RUN_SCHEMA = (
    "pid int, submission int, kind byte, n long, top double, bottom double,"
    " rows_before long, misses long, hits long, score double"
)


def score_groups(rows: DataFrame) -> DataFrame:
    """(submission, score) → non-matching and matching pairs: all the sort needs, since
    pairs of equal score and label are interchangeable. Aggregated map-side first, so
    ties (common: scores are usually printed with a few decimals) shrink the sort."""
    return rows.groupBy(SUBMISSION, "score").agg(
        F.count(F.when(~F.col("label"), 1)).alias("misses"),
        F.count(F.when(F.col("label"), 1)).alias("hits"),
    )


def sorted_summary(rows: DataFrame, partitions: int) -> DataFrame:
    """The global range sort of the score groups and one local pass over each partition:
    one row per (partition, submission) run, and one per score group holding true pairs."""
    order = [F.col(SUBMISSION).asc(), F.col("score").desc()]
    ordered = score_groups(rows).repartitionByRange(partitions, *order).sortWithinPartitions(*order)
    return ordered.mapInArrow(finish_partition, RUN_SCHEMA)


def finish_partition(batches):
    """Cumulative counts inside one sorted partition (runs on the executors)."""
    import pyarrow as pa
    from pyspark import TaskContext

    pid = TaskContext.get().partitionId()
    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    table = pa.concat_tables(tables)
    sub = table.column(SUBMISSION).to_numpy()
    score = table.column("score").to_numpy()
    misses = table.column("misses").to_numpy()
    hits = table.column("hits").to_numpy()
    size = misses + hits
    starts = np.flatnonzero(np.r_[True, sub[1:] != sub[:-1]])
    ends = np.r_[starts[1:], len(sub)]
    for start, end in zip(starts, ends):
        seg = slice(start, end)
        before = np.cumsum(size[seg]) - size[seg]
        has = np.flatnonzero(hits[seg] > 0)
        k = len(has)
        cols = {
            "pid": np.full(k + 1, pid, dtype=np.int32),
            SUBMISSION: np.full(k + 1, sub[start], dtype=np.int32),
            "kind": np.r_[0, np.ones(k)].astype(np.int8),
            "n": np.r_[size[seg].sum(), np.zeros(k)].astype(np.int64),
            "top": np.r_[score[start], np.zeros(k)],
            "bottom": np.r_[score[end - 1], np.zeros(k)],
            "rows_before": np.r_[0, before[has]].astype(np.int64),
            "misses": np.r_[0, misses[seg][has]].astype(np.int64),
            "hits": np.r_[0, hits[seg][has]].astype(np.int64),
            "score": np.r_[0.0, score[seg][has]],
        }
        yield pa.RecordBatch.from_pydict(cols)


def sorted_runs(rows: DataFrame, partitions: int) -> dict[int, list[SortedRun]]:
    """Runs per submission, in sorted order, from sorted_summary (at most one row per
    partition plus one per score group holding true pairs reach the driver)."""
    table = sorted_summary(rows, partitions).toArrow()
    data = {name: table.column(name).to_numpy() for name in table.column_names}
    runs: dict[int, list[SortedRun]] = {}
    heads = np.flatnonzero(data["kind"] == 0)
    for i in heads:
        pid, sub = data["pid"][i], data[SUBMISSION][i]
        mine = np.flatnonzero(
            (data["kind"] == 1) & (data["pid"] == pid) & (data[SUBMISSION] == sub)
        )
        runs.setdefault(int(sub), []).append(
            SortedRun(
                pid=int(pid),
                n=int(data["n"][i]),
                top=float(data["top"][i]),
                bottom=float(data["bottom"][i]),
                rows_before=data["rows_before"][mine],
                misses=data["misses"][mine],
                hits=data["hits"][mine],
                scores=data["score"][mine],
            )
        )
    for sub_runs in runs.values():
        sub_runs.sort(key=lambda run: run.pid)
        _check_runs(sub_runs)
    return runs


def _check_runs(runs: list[SortedRun]) -> None:
    # a cheap guard on what the offsets rely on; a failure is our bug, not the user's
    for before, after in zip(runs, runs[1:]):
        if before.bottom <= after.top:
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
        # a group's true pairs follow its misses: positions first+misses+1 .. +hits
        first = offset + run.rows_before + run.misses
        positions.append(np.repeat(first, run.hits) + _within(run.hits))
        scores.append(np.repeat(run.scores, run.hits))
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


def _within(counts: np.ndarray) -> np.ndarray:
    """1, 2, ..., c for each count c, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total) - starts + 1


def census(rows: DataFrame, checked: bool) -> dict[int, Census]:
    """Counts, checks and true-pair ranks of every submission, from one shuffle by query.

    Grouping by (submission, query) puts together everything that needs a query's
    predictions at once: repeated pairs (a repeat shares the query), the distinct queries,
    and the rank of each true pair (the count of the query's scores ≥ its score).
    The driver receives one row per submission; its ranks list has at most one entry per
    ground-truth pair.
    """
    truth = F.when(F.col("label"), F.col("score"))
    # trusted pairs (generated by this package) have no ``bad`` column to count
    bad = F.col("bad") if checked else F.lit(None).cast("struct<problem:string>")
    per_query = (
        rows.groupBy(SUBMISSION, "query_index")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.count(bad).alias("bad"),
            F.first(bad, ignorenulls=True).alias("first_bad"),
            F.size(F.collect_set("pair")).alias("distinct_pairs"),
            F.collect_list("score").alias("scores"),
            F.collect_list(truth).alias("truths"),
        )
        .select(
            SUBMISSION,
            "query_index",
            "n",
            "bad",
            "first_bad",
            (F.col("n") - F.col("distinct_pairs")).alias("repeats"),
            F.transform("truths", lambda t: F.size(F.filter("scores", lambda x: x >= t)) - 1).alias(
                "ranks"
            ),
        )
    )
    unknown = is_unknown(F.col("query_index"))
    summary = per_query.groupBy(SUBMISSION).agg(
        F.sum("n").alias("n"),
        F.sum("bad").alias("bad"),
        F.first("first_bad", ignorenulls=True).alias("first_bad"),
        F.sum(F.when(unknown, F.col("n")).otherwise(0)).alias("unknown"),
        F.count(F.when(~unknown, 1)).alias("known_queries"),
        F.sum("repeats").alias("repeats"),
        F.first(F.when(F.col("repeats") > 0, F.col("query_index")), ignorenulls=True).alias("repeating"),
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
        for r in labelled.where(is_unknown(F.col("query_index")))
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
    micro_ap, point, curve, n_tp, n_pairs = finish(runs, gt.n_positives, max_curve_points)
    if n_pairs != stats.n_predictions:
        raise RuntimeError(f"internal error: sorted {n_pairs} pairs of {stats.n_predictions}")
    return assemble(
        gt,
        micro_ap,
        point,
        found_ranks,
        curve,
        n_predictions=n_pairs,
        n_true_positives=n_tp,
        n_queries_with_predictions=stats.n_queries_with_predictions,
        n_unknown_query_predictions=stats.n_unknown_query_predictions,
    )


def score_rows(
    rows: DataFrame,
    gt: GroundTruth,
    partitions: int,
    max_curve_points: int,
    stats: dict[int, QueryStats],
    ranks: dict[int, np.ndarray],
    phases: Phases | None = None,
    gt_of: dict[int, GroundTruth] | None = None,
) -> dict[int, MatchingMetrics]:
    """Metrics of every submission of compact rows (labels.compact) through the
    sort plan above; ``stats`` and ``ranks`` from the census. ``gt_of``: a submission's own
    ground truth when it answers only part of ``gt`` (rank evaluation scores each test
    alone; the labels, from ``gt``, are the same)."""
    gt_of = gt_of or {}
    phases = phases or Phases()
    with phases.phase("sort") as note:
        runs = sorted_runs(rows, partitions)
        note["rows"] = sum(run.n for sub_runs in runs.values() for run in sub_runs)
        note["detail"] = f"{partitions} range partitions"
    with phases.phase("aggregate") as note:
        empty = np.zeros(0, dtype=np.int64)
        results = {
            sub: metrics_from_parts(
                gt_of.get(sub, gt), runs.get(sub, []), ranks.get(sub, empty), sub_stats, max_curve_points
            )
            for sub, sub_stats in stats.items()
        }
        note["rows"] = sum(m.n_true_positives for m in results.values())
        note["detail"] = "true positives"
    return results
