"""Labelling: each prediction is a true pair or not, and its query known (with an index) or not.

The ground truth is small (25,000 queries in DISC21 dev, a million at most), so it is
broadcast to every executor as one small table and the predictions never move for this
step: one broadcast hash join in the JVM (``labelled``), no row through Python. After
it, the string ids are no longer needed: the scoring plan runs on compact numeric rows
(submission, query index, label, score, pair hash).
"""

from __future__ import annotations

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


def ground_truth_table(spark: SparkSession, gt: GroundTruth) -> DataFrame:
    """The ground truth as one small frame built from Arrow in one call: ``query_id
    string, query_index long, positives array<string>``, a row per query (its position
    in the ground truth, its positive references)."""
    import pyarrow as pa

    ids = [str(q) for q in gt.query_ids]
    refs: dict[str, list[str]] = {q: [] for q in ids}
    for q, r in dict.fromkeys(zip(map(str, gt.positive_queries), map(str, gt.positive_references))):
        refs[q].append(r)
    table = pa.table(
        {
            "query_id": pa.array(ids, pa.string()),
            "query_index": pa.array(range(len(ids)), pa.int64()),
            "positives": pa.array([refs[q] for q in ids], pa.list_(pa.string())),
        }
    )
    return spark.createDataFrame(table)


def labelled(pairs: DataFrame, gt: GroundTruth, *keep: str) -> DataFrame:
    """The compact rows of ``pairs`` (``submission``, ``query_id``, ``reference_id``,
    ``score`` and the ``keep`` columns): ``submission int, query_index long, label
    boolean, score double, pair long, *keep``. Labelled in the JVM by one broadcast hash
    join with the ground truth's queries (each with its positive references), so no row
    crosses into Python; an unknown query gets its negative key (``unknown_query_key``),
    a missing score NaN, and -0.0 becomes 0.0 (they tie in the official sort)."""
    queries = ground_truth_table(pairs.sparkSession, gt)
    joined = pairs.join(F.broadcast(queries), "query_id", "left")
    label = F.array_contains(F.col("positives"), F.col("reference_id"))
    return joined.select(
        F.col(SUBMISSION).cast("int").alias(SUBMISSION),
        F.coalesce(F.col("query_index"), unknown_query_key()).alias("query_index"),
        F.coalesce(label, F.lit(False)).alias("label"),
        (F.coalesce(F.col("score"), F.lit(float("nan"))) + F.lit(0.0)).alias("score"),
        pair_hash().alias("pair"),
        *keep,
    )
