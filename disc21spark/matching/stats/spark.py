"""The bootstrap on Spark: one counting pass over the labelled rows.

The true pairs are few (at most the ground truth's positives per submission): they are
collected, and their levels (distinct scores) broadcast. Each partition then puts its
non-matching rows into the levels' buckets (``searchsorted``), weighs them by their
query's resample weights, which it computes itself from the seed and the query id
(``weights.py``), and sends back per (submission, bucket, resample) integer counts; the
driver adds them up. Integer counts add up alike in any order, so the counts, and the
figures the specification computes from them, are the same bits whatever the
partitioning. The true pairs' ranks come from one broadcast join of the true pairs
with their queries' rows.
"""

from __future__ import annotations

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.phases import Phases
from disc21spark.matching.labels import SUBMISSION
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.stats import spec
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.weights import query_keys

COUNTS_SCHEMA = "submission int, misses binary, optimistic binary"


def attach(
    spark: SparkSession,
    rows: DataFrame,
    metrics: dict[int, MatchingMetrics],
    gt: GroundTruth,
    r: Resampling,
    phases: Phases,
) -> dict[int, MatchingMetrics]:
    """``metrics`` with each submission's Uncertainty. ``rows``: the scored submissions'
    compact labelled rows (``submission int, query_index long, label boolean, score
    double``: ``matching/labels.encoded``), query_index < 0 for an unknown query."""
    from dataclasses import replace

    with phases.phase("bootstrap") as note:
        found = measure(spark, rows, list(metrics), gt, r)
        note["rows"] = sum(m.n_predictions for m in metrics.values())
        note["detail"] = f"{r.resamples:,} resamples, one counting pass"
    return {s: replace(m, uncertainty=found[s]) for s, m in metrics.items()}


def measure(
    spark: SparkSession, rows: DataFrame, subs: list[int], gt: GroundTruth, r: Resampling
) -> dict[int, Uncertainty]:
    """Each listed submission's Uncertainty, equal to ``spec.uncertainty`` bit for bit."""
    keys = query_keys(gt.query_ids, r.seed)
    true = _true_pairs(rows, subs)
    levels = {s: spec.levels_of(true[s][1]) for s in subs}
    counts = _miss_counts(spark, rows, levels, keys, r)
    # the ranks only weigh in the resamples' recall@k: no join without resamples
    unranked = {s: np.zeros(len(true[s][0]), np.int64) for s in subs}
    ranks = _ranks(spark, rows, true) if r.resamples else unranked
    positives = spec.positive_keys(gt, r.seed)
    out = {}
    for s in subs:
        query_index, scores = true[s]
        t = len(levels[s])
        misses, optimistic = counts.get(
            s, (np.zeros((t, r.resamples), np.int64), np.zeros(t, np.int64))
        )
        pairs = (keys[query_index], scores, ranks[s])
        out[s] = spec.uncertainty_of(levels[s], misses, optimistic, pairs, positives, r)
    return out


def _true_pairs(rows: DataFrame, subs: list[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per submission: (query_index int64, score float64) of its true pairs (in no
    particular order: no figure depends on it)."""
    lists: dict[int, tuple[list, list]] = {s: ([], []) for s in subs}
    for row in rows.where(F.col("label")).select(SUBMISSION, "query_index", "score").collect():
        qi, sc = lists[row[0]]
        qi.append(row[1])
        sc.append(row[2])
    return {
        s: (np.array(qi, dtype=np.int64), np.array(sc, dtype=np.float64))
        for s, (qi, sc) in lists.items()
    }


def _ranks(spark: SparkSession, rows: DataFrame, true: dict) -> dict[int, np.ndarray]:
    """Per submission: the rank of each true pair (``_true_pairs``' order): how many of
    its query's predictions score at least as high, itself excluded."""
    listed = [
        (int(s), i, int(q), float(sc))
        for s, (qi, scores) in true.items()
        for i, (q, sc) in enumerate(zip(qi, scores))
    ]
    out = {s: np.zeros(len(qi), np.int64) for s, (qi, _) in true.items()}
    if not listed:
        return out
    pairs = spark.createDataFrame(listed, f"{SUBMISSION} int, pair int, query_index long, t double")
    ahead = (
        rows.select(SUBMISSION, "query_index", "score")
        .join(F.broadcast(pairs), [SUBMISSION, "query_index"])
        .where(F.col("score") >= F.col("t"))
        .groupBy(SUBMISSION, "pair")
        .count()
        .collect()
    )
    for row in ahead:
        out[row[0]][row[1]] = row[2] - 1
    return out


def _miss_counts(
    spark: SparkSession, rows: DataFrame, levels: dict, keys: np.ndarray, r: Resampling
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per submission with true pairs: its non-matches' counts (``spec.miss_counts``),
    counted in each partition and added up here."""
    wanted = {s: lv for s, lv in levels.items() if len(lv)}
    if not wanted:
        return {}
    shared = spark.sparkContext.broadcast((wanted, keys, r))

    def count(batches):
        import pyarrow as pa

        wanted, keys, r = shared.value
        total: dict[int, list] = {}
        for batch in batches:
            for s, parts in _batch_counts(batch, wanted, keys, r).items():
                if s in total:
                    total[s] = [a + b for a, b in zip(total[s], parts)]
                else:
                    total[s] = parts
        for s, (misses, optimistic) in total.items():
            yield pa.RecordBatch.from_pydict(
                {SUBMISSION: [s], "misses": [misses.tobytes()], "optimistic": [optimistic.tobytes()]},
                schema=pa.schema([(SUBMISSION, pa.int32()), ("misses", pa.binary()),
                                  ("optimistic", pa.binary())]),
            )  # fmt: skip

    try:
        misses = rows.where(~F.col("label")).select(SUBMISSION, "query_index", "score")
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for row in misses.mapInArrow(count, COUNTS_SCHEMA).toLocalIterator():
            s, t = row[0], len(wanted[row[0]])
            m = np.frombuffer(row[1], np.int64).reshape(t, r.resamples)
            o = np.frombuffer(row[2], np.int64)
            old = out.get(s)
            out[s] = (m.copy(), o.copy()) if old is None else (old[0] + m, old[1] + o)
        return out
    finally:
        shared.unpersist()


def _batch_counts(batch, wanted: dict, keys: np.ndarray, r: Resampling) -> dict[int, list]:
    """One Arrow batch of non-matching rows: per submission, [weighted, optimistic]."""
    sub = batch.column(0).to_numpy(zero_copy_only=False)
    query_index = batch.column(1).to_numpy(zero_copy_only=False)
    score = batch.column(2).to_numpy(zero_copy_only=False)
    out = {}
    for s in np.unique(sub):
        levels = wanted.get(int(s))
        if levels is None:
            continue
        mine = sub == s
        qi = query_index[mine]
        fixed = qi < 0
        at = np.where(fixed, 0, qi)
        parts = spec.miss_counts(levels, score[mine], keys[at], fixed, r)
        out[int(s)] = list(parts)
    return out
