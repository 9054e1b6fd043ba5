"""Labelling: each prediction is a true pair or not, and its query known (with an index) or not.

The ground truth is small (25,000 queries in DISC21 dev, a million at most), so it is
broadcast to every executor and the predictions never move for this step: two broadcast
hash joins on the ids (``encoded``). After it, the string ids are no longer needed: the
scoring plan runs on compact numeric rows (submission, query index, label, score, pair
hash).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.matching.model import GroundTruth

SUBMISSION = "submission"


def unknown_query_key() -> Column:
    """An unknown query's negative key from its hash (only grouping and messages use it)."""
    return F.lit(-1) - F.pmod(F.xxhash64("query_id"), F.lit(2**62))


def query_key(query_index: int, gt: GroundTruth) -> Column:
    """A predicate on string rows selecting the query whose ``query_index`` is given."""
    if query_index >= 0:
        return F.col("query_id") == F.lit(str(gt.query_ids[query_index]))
    return unknown_query_key() == F.lit(query_index)


def pair_hash() -> Column:
    """64-bit hash of (query_id, reference_id): the repeated-pair check's key."""
    return F.xxhash64("query_id", "reference_id")


def ground_truth_frames(spark: SparkSession, gt: GroundTruth) -> tuple[DataFrame, DataFrame]:
    """The ground truth as two small frames for the labelling joins: every query with
    its index (``query_id string, query_index long``: its position in the ground truth)
    and every positive pair once (``query_id, reference_id string, label boolean``)."""
    queries = pd.DataFrame(
        {
            "query_id": [str(q) for q in gt.query_ids],
            "query_index": np.arange(len(gt.query_ids), dtype=np.int64),
        }
    )
    pairs = sorted({(str(q), str(r)) for q, r in zip(gt.positive_queries, gt.positive_references)})
    positives = pd.DataFrame(
        {
            "query_id": [q for q, _ in pairs],
            "reference_id": [r for _, r in pairs],
            "label": np.ones(len(pairs), dtype=bool),
        }
    )
    return (
        spark.createDataFrame(queries, "query_id string, query_index long"),
        spark.createDataFrame(positives, "query_id string, reference_id string, label boolean"),
    )


def encoded(pairs: DataFrame, gt: GroundTruth, *keep: str) -> DataFrame:
    """The compact rows the scoring plan needs (``submission int, query_index long, label
    boolean, score double, pair long``, then the ``keep`` columns): each prediction
    labelled by two broadcast hash joins on its ids in the JVM, so no row crosses to a
    Python worker for it (an Arrow round trip of the ids cost more than these joins). A
    null score is NaN, as the in-process engine reads it."""
    queries, positives = ground_truth_frames(pairs.sparkSession, gt)
    joined = pairs.join(F.broadcast(queries), ["query_id"], "left").join(
        F.broadcast(positives), ["query_id", "reference_id"], "left"
    )
    return joined.select(
        F.col(SUBMISSION).cast("int").alias(SUBMISSION),
        F.coalesce(F.col("query_index"), unknown_query_key()).alias("query_index"),
        F.coalesce(F.col("label"), F.lit(False)).alias("label"),
        F.coalesce(F.col("score"), F.lit(float("nan"))).alias("score"),
        pair_hash().alias("pair"),
        *keep,
    )
