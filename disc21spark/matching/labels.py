"""Labelling: each prediction is a true pair or not, and its query known (with an index) or not.

The ground truth is small (25,000 queries in DISC21 dev, a million at most), so it is
broadcast to every executor as integer codes (``Dictionary``) and the predictions never
move for this step: each partition labels its Arrow batches in numpy (``encoded``), with
no join on string ids. After it, the string ids are no longer needed: the scoring plan
runs on compact numeric rows (submission, query index, label, score, pair hash).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from disc21spark.matching.model import GroundTruth

SUBMISSION = "submission"


def unknown_query_key() -> Column:
    """An unknown query's negative key from its hash (only grouping and messages use it);
    ``encode_batches`` computes the same from the same hash."""
    return F.lit(-1) - F.pmod(F.xxhash64("query_id"), F.lit(2**62))


def query_key(query_index: int, gt: GroundTruth) -> Column:
    """A predicate on string rows selecting the query whose ``query_index`` is given."""
    if query_index >= 0:
        return F.col("query_id") == F.lit(str(gt.query_ids[query_index]))
    return unknown_query_key() == F.lit(query_index)


def pair_hash() -> Column:
    """64-bit hash of (query_id, reference_id): the repeated-pair check's key."""
    return F.xxhash64("query_id", "reference_id")


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

    for batch in _grouped(batches):
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


GROUP_ROWS = 100_000  # rows labelled at once: Arrow's index_in hashes its value set per call


def _grouped(batches):
    """Spark's Arrow batches (10,000 rows) joined into batches of GROUP_ROWS or more (the
    last may hold fewer); empty batches are dropped."""
    import pyarrow as pa

    held, rows = [], 0
    for batch in batches:
        if batch.num_rows:
            held.append(batch)
            rows += batch.num_rows
        if rows >= GROUP_ROWS:
            yield pa.Table.from_batches(held).combine_chunks().to_batches()[0]
            held, rows = [], 0
    if held:
        yield pa.Table.from_batches(held).combine_chunks().to_batches()[0]


def _index_in(pc, values, value_set) -> np.ndarray:
    """Position of each value in ``value_set`` (int64; -1: absent or null)."""
    found = pc.index_in(values, value_set=value_set)
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
