"""Labelling: each prediction is a true pair or not, and its query known (with an index) or not.

The ground truth is small (25,000 queries in DISC21 dev, a million at most), so it
is broadcast to every executor and the predictions never move for this step. After
it, the string ids are no longer needed: the scoring plan runs on compact numeric rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

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


@dataclass(frozen=True)
class Dictionary:
    """The ground truth as integer codes, broadcast once: ``queries`` (Arrow strings, in
    the ground truth's order: a query's index is its position), ``references`` (the
    positive references, sorted, distinct) and ``keys`` (int64, sorted: query index ×
    len(references) + reference index of every positive pair)."""

    queries: object
    references: object
    keys: np.ndarray

    @classmethod
    def of(cls, gt: GroundTruth) -> Dictionary:
        import pyarrow as pa

        queries = pa.array([str(q) for q in gt.query_ids], pa.string())
        refs = np.unique(gt.positive_references.astype(str))
        index = {str(q): i for i, q in enumerate(gt.query_ids)}
        query = np.array([index[str(q)] for q in gt.positive_queries], np.int64)
        ref = np.searchsorted(refs, gt.positive_references.astype(str))
        return cls(queries, pa.array(refs.tolist(), pa.string()), np.sort(query * len(refs) + ref))


def encoded(pairs: DataFrame, gt: GroundTruth, *keep: str) -> DataFrame:
    """The compact rows (as ``compact(label(...))``) labelled on the executors in numpy
    over Arrow batches against the broadcast ``Dictionary``: no join on strings."""
    spark = pairs.sparkSession
    shipped = spark.sparkContext.broadcast(Dictionary.of(gt))
    columns = pairs.select(
        F.col(SUBMISSION).cast("int").alias(SUBMISSION),
        "query_id",
        "reference_id",
        "score",
        F.xxhash64("query_id").alias("query_hash"),
        pair_hash().alias("pair"),
        *keep,
    )
    schema = T.StructType(
        [
            T.StructField(SUBMISSION, T.IntegerType()),
            T.StructField("query_index", T.LongType()),
            T.StructField("label", T.BooleanType()),
            T.StructField("score", T.DoubleType()),
            T.StructField("pair", T.LongType()),
            *(pairs.schema[c] for c in keep),
        ]
    )
    return columns.mapInArrow(lambda batches: encode_batches(batches, shipped.value, keep), schema)


def encode_batches(batches, dictionary: Dictionary, keep: tuple[str, ...] = ()):
    """Runs on the executors: raw Arrow batches in, compact batches out."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for batch in batches:
        if not batch.num_rows:
            continue
        q = _index_in(pc, batch.column("query_id"), dictionary.queries)
        r = _index_in(pc, batch.column("reference_id"), dictionary.references)
        key = q * len(dictionary.references) + r
        at = np.minimum(np.searchsorted(dictionary.keys, key), max(len(dictionary.keys) - 1, 0))
        label = (q >= 0) & (r >= 0) & (dictionary.keys[at] == key)
        query_hash = batch.column("query_hash").to_numpy(zero_copy_only=False)
        # as unknown_query_key: -1 - pmod(hash, 2**62) (numpy's % of a positive modulus is
        # never negative)
        query_index = np.where(q >= 0, q, -1 - query_hash % (1 << 62))
        score = pc.fill_null(batch.column("score"), float("nan")).to_numpy(zero_copy_only=False)
        yield pa.RecordBatch.from_arrays(
            [
                batch.column(SUBMISSION),
                pa.array(query_index, pa.int64()),
                pa.array(label, pa.bool_()),
                pa.array(score, pa.float64()),
                batch.column("pair"),
                *(batch.column(c) for c in keep),
            ],
            [SUBMISSION, "query_index", "label", "score", "pair", *keep],
        )


def _index_in(pc, values, value_set) -> np.ndarray:
    """Position of each value in ``value_set`` (int64; -1: absent or null)."""
    found = pc.index_in(values, value_set=value_set)
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
