"""Baseline: the naive Spark plan, a Window ordered over all rows (one partition)."""

from __future__ import annotations

import json
import sys
import warnings

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from disc21spark.testing.synth import read_ground_truth_csv


def main(gt_path: str, preds_path: str) -> None:
    warnings.filterwarnings("ignore")
    spark = SparkSession.builder.appName("naive-window").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    table = read_ground_truth_csv(gt_path)
    positives = spark.createDataFrame(table[table["reference_id"] != ""]).withColumn(
        "label", F.lit(1)
    )
    n_pos = positives.count()
    preds = (
        spark.read.schema("query_id string, reference_id string, score double")
        .csv(preds_path)
        .where(F.col("query_id") != "query_id")
        .join(F.broadcast(positives), ["query_id", "reference_id"], "left")
        .withColumn("label", F.coalesce("label", F.lit(0)))
    )
    w = Window.orderBy(F.desc("score"), F.asc("label")).rowsBetween(Window.unboundedPreceding, 0)
    ranked = preds.select(
        "label",
        F.sum("label").over(w).alias("ntp"),
        F.row_number().over(Window.orderBy(F.desc("score"), F.asc("label"))).alias("pos"),
    )
    term = (F.col("ntp") / n_pos - (F.col("ntp") - 1) / n_pos) * (F.col("ntp") / F.col("pos"))
    ap = ranked.where("label = 1").agg(F.sum(term)).collect()[0][0] or 0.0
    print(json.dumps({"micro_ap": ap}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
