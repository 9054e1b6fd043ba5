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

from disc21spark.core.spark import with_views
from disc21spark.matching.model import GroundTruth

SUBMISSION = "submission"


# an unknown query's negative key from its hash (only grouping and messages use it) and
# the repeated-pair check's 64-bit key of (query_id, reference_id), as SQL text: the
# labelling parses them with the rest of its columns, in one call
UNKNOWN_QUERY_KEY = f"-1 - pmod(xxhash64(query_id), {2**62})"
PAIR_HASH = "xxhash64(query_id, reference_id)"


def query_key(query_index: int, gt: GroundTruth) -> Column:
    """A predicate on string rows selecting the query whose ``query_index`` is given."""
    if query_index >= 0:
        return F.col("query_id") == F.lit(str(gt.query_ids[query_index]))
    return F.expr(UNKNOWN_QUERY_KEY) == F.lit(query_index)


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
    ``score`` and the columns they name) with ``keep`` (SQL text each, over the joined rows):
    ``submission int, query_index long, label boolean, score double, pair long, *keep``.
    Labelled in the JVM by one broadcast hash join with the ground truth's queries (each
    with its positive references), so no row crosses into Python; an unknown query gets
    its negative key (``UNKNOWN_QUERY_KEY``), a missing score NaN, and -0.0 becomes 0.0
    (they tie in the official sort). One SQL statement (``with_views``, issue 47)."""
    # 0.0D: a double, as the score
    columns = ", ".join(
        [
            f"CAST({SUBMISSION} AS INT) AS {SUBMISSION}",
            f"coalesce(query_index, {UNKNOWN_QUERY_KEY}) AS query_index",
            "coalesce(array_contains(positives, reference_id), false) AS label",
            "coalesce(score, CAST('NaN' AS DOUBLE)) + 0.0D AS score",
            f"{PAIR_HASH} AS pair",
            *keep,
        ]
    )
    return with_views(
        lambda pairs, queries: (
            f"""SELECT /*+ BROADCAST(q) */ {columns}
        FROM {pairs} AS p LEFT JOIN {queries} AS q USING (query_id)"""
        ),
        pairs=pairs,
        queries=ground_truth_table(pairs.sparkSession, gt),
    )
