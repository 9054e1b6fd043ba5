"""Labelling: each prediction is a true pair or not, and its query known (with an index) or not.

The ground truth is small (25,000 queries in DISC21 dev, a million at most), so it
is broadcast to every executor and the predictions never move for this step. After
it, the string ids are no longer needed: the scoring plan runs on compact numeric rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.model import GroundTruth

SUBMISSION = "submission"
# what the scoring plan reads: 4 + 8 + 1 + 8 + 8 bytes a row
COMPACT_COLUMNS = (SUBMISSION, "qid", "label", "score", "pair")


def ground_truth_frames(spark: SparkSession, gt: GroundTruth) -> tuple[DataFrame, DataFrame]:
    """(positive pairs, every query with its index) as small Spark frames, ready to broadcast."""
    positives = spark.createDataFrame(
        pd.DataFrame(
            {"query_id": gt.positive_queries, "reference_id": gt.positive_references}
        ).astype(str),
        "query_id string, reference_id string",
    ).withColumn("label", F.lit(True))
    queries = spark.createDataFrame(
        pd.DataFrame(
            {
                "query_id": pd.Series(gt.query_ids).astype(str),
                "qid": np.arange(gt.n_queries, dtype=np.int32),
            }
        ),
        "query_id string, qid int",
    )
    return positives, queries


def label(predictions: DataFrame, positives: DataFrame, queries: DataFrame) -> DataFrame:
    """Adds ``label`` (a ground-truth pair) and ``qid``: the query's index in the ground
    truth, or for an unknown query a negative key from its hash (only grouping uses it)."""
    return (
        predictions.join(F.broadcast(positives), ["query_id", "reference_id"], "left")
        .join(F.broadcast(queries), ["query_id"], "left")
        .withColumn("label", F.coalesce(F.col("label"), F.lit(False)))
        .withColumn("qid", F.coalesce(F.col("qid").cast("long"), unknown_query_key()))
    )


def unknown_query_key() -> Column:
    return F.lit(-1) - F.pmod(F.xxhash64("query_id"), F.lit(2**62))


def is_unknown(qid: Column) -> Column:
    return qid < 0


def query_key(qid: int, gt: GroundTruth) -> Column:
    """A predicate on string rows selecting the query whose ``qid`` is given."""
    if qid >= 0:
        return F.col("query_id") == F.lit(str(gt.query_ids[qid]))
    return unknown_query_key() == F.lit(qid)


def pair_hash() -> Column:
    """64-bit hash of (query_id, reference_id): the sort's tiebreak and the duplicate check's key."""
    return F.xxhash64("query_id", "reference_id")


def compact(labelled: DataFrame, submission: Column | int = 0, *keep: str) -> DataFrame:
    """The numeric rows the scoring plan needs (plus the `keep` columns)."""
    sub = submission if isinstance(submission, Column) else F.lit(submission)
    return labelled.select(
        sub.cast("int").alias(SUBMISSION),
        "qid",
        "label",
        "score",
        pair_hash().alias("pair"),
        *keep,
    )
