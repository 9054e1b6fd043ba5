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

from disc21spark.matching.model import GroundTruth

SUBMISSION = "submission"


def ground_truth_frame(spark: SparkSession, gt: GroundTruth) -> DataFrame:
    """Every query with its index and its true references (none for a distractor):
    a small frame, broadcast for the one labelling join."""
    refs: dict[str, list[str]] = {str(q): [] for q in gt.query_ids}
    for q, r in zip(gt.positive_queries, gt.positive_references):
        refs[str(q)].append(str(r))
    table = pd.DataFrame(
        {
            "query_id": list(refs),
            "query_index": np.arange(len(refs), dtype=np.int64),
            "true_references": list(refs.values()),
        }
    )
    return spark.createDataFrame(table, "query_id string, query_index long, true_references array<string>")


def label(predictions: DataFrame, queries: DataFrame) -> DataFrame:
    """Adds ``label`` (a ground-truth pair) and ``query_index``: the query's index in the ground
    truth, or for an unknown query a negative key from its hash (only grouping uses it)."""
    joined = predictions.join(F.broadcast(queries), ["query_id"], "left")
    return joined.withColumn(
        "label",
        F.coalesce(F.array_contains("true_references", F.col("reference_id")), F.lit(False)),
    ).withColumn("query_index", F.coalesce(F.col("query_index"), unknown_query_key()))


def unknown_query_key() -> Column:
    return F.lit(-1) - F.pmod(F.xxhash64("query_id"), F.lit(2**62))


def is_unknown(query_index: Column) -> Column:
    return query_index < 0


def query_key(query_index: int, gt: GroundTruth) -> Column:
    """A predicate on string rows selecting the query whose ``query_index`` is given."""
    if query_index >= 0:
        return F.col("query_id") == F.lit(str(gt.query_ids[query_index]))
    return unknown_query_key() == F.lit(query_index)


def pair_hash() -> Column:
    """64-bit hash of (query_id, reference_id): the repeated-pair check's key."""
    return F.xxhash64("query_id", "reference_id")


def compact(labelled: DataFrame, *keep: str) -> DataFrame:
    """The numeric rows the scoring plan needs, 29 bytes each: submission (the labelled
    frame's column), query_index, label, score, pair (plus the `keep` columns)."""
    return labelled.select(
        F.col(SUBMISSION).cast("int").alias(SUBMISSION),
        "query_index",
        "label",
        "score",
        pair_hash().alias("pair"),
        *keep,
    )
