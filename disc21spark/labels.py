"""Labelling: each prediction is a true pair or not, and its query known or not.

The ground truth is small (25,000 queries in DISC21 dev, a million at most), so it
is broadcast to every executor and the predictions never move for this step.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.model import GroundTruth


def ground_truth_frames(spark: SparkSession, gt: GroundTruth) -> tuple[DataFrame, DataFrame]:
    """(positive pairs, every query) as small Spark frames, ready to broadcast."""
    positives = spark.createDataFrame(
        pd.DataFrame(
            {"query_id": gt.positive_queries, "reference_id": gt.positive_references}
        ).astype(str),
        "query_id string, reference_id string",
    ).withColumn("label", F.lit(True))
    queries = spark.createDataFrame(
        pd.DataFrame({"query_id": gt.query_ids}).astype(str), "query_id string"
    ).withColumn("known", F.lit(True))
    return positives, queries


def label(predictions: DataFrame, positives: DataFrame, queries: DataFrame) -> DataFrame:
    """Adds ``label`` (a ground-truth pair) and ``known`` (a ground-truth query)."""
    return (
        predictions.join(F.broadcast(positives), ["query_id", "reference_id"], "left")
        .join(F.broadcast(queries), ["query_id"], "left")
        .withColumn("label", F.coalesce(F.col("label"), F.lit(False)))
        .withColumn("known", F.coalesce(F.col("known"), F.lit(False)))
    )
