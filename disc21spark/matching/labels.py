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


# an unknown query's negative key from its hash (only grouping and messages use it)
UNKNOWN_QUERY_KEY = f"-1 - pmod(xxhash64({{query_id}}), {2**62})"


def unknown_query_key() -> Column:
    """An unknown query's negative key from its hash (``UNKNOWN_QUERY_KEY``)."""
    return F.expr(UNKNOWN_QUERY_KEY.format(query_id="query_id"))


def query_key(query_index: int, gt: GroundTruth) -> Column:
    """A predicate on string rows selecting the query whose ``query_index`` is given."""
    if query_index >= 0:
        return F.col("query_id") == F.lit(str(gt.query_ids[query_index]))
    return unknown_query_key() == F.lit(query_index)


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
    # one SQL statement: one py4j call where the same plan built column by column took
    # hundreds; ``pair``, the 64-bit hash of (query_id, reference_id), is the repeat check's key
    kept = "".join(f", p.{c}" for c in keep)
    return pairs.sparkSession.sql(
        f"""SELECT /*+ BROADCAST(q) */ CAST(p.{SUBMISSION} AS int) AS {SUBMISSION},
          coalesce(q.query_index, {UNKNOWN_QUERY_KEY.format(query_id="p.query_id")}) AS query_index,
          coalesce(array_contains(q.positives, p.reference_id), false) AS label,
          coalesce(p.score, double('NaN')) + 0.0D AS score,
          xxhash64(p.query_id, p.reference_id) AS pair{kept}
        FROM {{pairs}} p LEFT JOIN {{queries}} q ON p.query_id = q.query_id""",
        pairs=pairs,
        queries=queries,
    )
