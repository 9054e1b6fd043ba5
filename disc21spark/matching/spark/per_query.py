"""Per-query results on Spark: the pass of their own that ``per_query.QueryRows`` needs.

The compact rows the distributed plan counts drop the reference ids, so the parsed pairs
are read once more: joined with the ground truth's queries (broadcast, as ``labels.py``
labels them), then one aggregation per (submission, query) of the ground truth: its
predictions and its best-scoring wrong reference. The driver receives one row per query
of the ground truth at most, never the submission's rows.
"""

from __future__ import annotations

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from disc21spark.matching import per_query
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.spark.labels import SUBMISSION, ground_truth_table
from disc21spark.matching.spark.plan import RankedTruth


def query_rows(pairs: DataFrame, gt: GroundTruth, submissions: list[int]) -> dict:
    """{submission: per_query.QueryRows} of ``pairs`` (``score.PAIRS``, checked)."""
    queries = ground_truth_table(pairs.sparkSession, gt)
    joined = pairs.where(F.col(SUBMISSION).isin(submissions)).join(F.broadcast(queries), "query_id")
    wrong = ~F.array_contains(F.col("positives"), F.col("reference_id"))
    score = F.col("score") + F.lit(0.0)  # -0.0 ties with 0.0
    # the smallest (−score, id): the highest score, then the smallest id; −0.0 kept out
    key = F.struct(F.when(score == 0, F.lit(0.0)).otherwise(-score).alias("s"), "reference_id")
    rows = joined.groupBy(SUBMISSION, "query_index").agg(
        F.count(F.lit(1)).alias("n"), F.min(F.when(wrong, key)).alias("top")
    )
    out = {s: per_query.QueryRows.empty(gt.n_queries) for s in submissions}
    for r in rows.collect():
        held, q = out[r[SUBMISSION]], r["query_index"]
        held.predictions[q] = r["n"]
        if r["top"] is not None:
            held.wrong_score[q] = -r["top"]["s"] + 0.0
            held.wrong_reference[q] = r["top"]["reference_id"]
    return out


def with_tables(
    metrics: dict, pairs: DataFrame, ranked: dict[int, RankedTruth], gt: GroundTruth, groups=None
) -> dict:
    """``metrics`` (per submission) each with its per-query table (``metrics.queries``)."""
    from dataclasses import replace

    rows = query_rows(pairs, gt, list(metrics))
    out = {}
    for sub, m in metrics.items():
        t = ranked[sub]
        truth = per_query.TrueRanks(t.query, t.score, np.asarray(t.rank), t.misses_ge)
        out[sub] = replace(m, queries=per_query.table(gt, truth, rows[sub], groups))
    return out
