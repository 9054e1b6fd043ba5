"""Exact ranks of the originals and the kNN pairs for μAP, in one pass of the descriptor
track's broadcast plan: the references go to every executor once, query partitions are
searched in blocks.

The rank is a count over the whole library, so it is never read off a truncated kNN list.
Each block gets approximate scores against every reference from one float32 matrix
product; references clearly above the original's exact score are counted, those clearly
below are not, and only those within the float32 rounding margin are scored exactly, pair
by pair. The counts equal ranks.exact_ranks (tests hold them equal).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.spark import arrow_output
from disc21spark.descriptors import spec as descriptor_spec
from disc21spark.ranks import distances
from disc21spark.ranks.spec import Layout, Ranks, count_at_least

SCORES_PER_BLOCK = 1 << 22  # approximate scores held at once: 16 MB of float32
_ARROW, OUTPUT = arrow_output(
    [
        ("kind", pa.int32()),
        ("submission", pa.int32()),
        ("query_id", pa.string()),
        ("reference_id", pa.string()),
        ("score", pa.float64()),
        ("rank", pa.int64()),
        ("rank_in_subset", pa.int64()),
        ("rank_by_size", pa.list_(pa.int64())),
        ("better", pa.int64()),
        ("better_in_subset", pa.int64()),
        ("better_by_size", pa.list_(pa.int64())),
    ]
)
PAIR, RANK = 0, 1


def block_ranks(
    s: descriptor_spec.Searcher, xq: np.ndarray, original: np.ndarray, lay: Layout
) -> Ranks:
    """Ranks of a block's originals (original < 0: a distractor, rank 0), l2 or ip."""
    out = Ranks.zeros(len(xq), len(lay.sizes))
    matched = np.flatnonzero(original >= 0)
    if len(matched) == 0:
        return out
    xb = s.vectors
    xm = np.ascontiguousarray(xq[matched], dtype=np.float32)
    target = descriptor_spec.pair_scores(
        xm, xb, np.arange(len(matched)), original[matched], s.metric
    )
    target = target.astype(np.float64)
    products = xm @ xb.T  # float32 BLAS: fast, off by at most the slack below
    if s.metric == "l2":
        qn = np.einsum("ij,ij->i", xm, xm)
        bn = np.einsum("ij,ij->i", xb, xb)
        approx = -(qn[:, None] + bn[None, :] - 2 * products).astype(np.float64)
    else:
        approx = products.astype(np.float64)
    margin = (2 * descriptor_spec.rounding_slack(s, xm))[:, None]
    # beyond the margin the exact score is surely above the target, hence strictly better
    surely = approx > target[:, None] + margin
    unsure_q, unsure_r = np.nonzero(np.abs(approx - target[:, None]) <= margin)
    exact = descriptor_spec.pair_scores(xm, xb, unsure_q, unsure_r, s.metric).astype(np.float64)
    at_least, above = exact >= target[unsure_q], exact > target[unsure_q]
    for i, q in enumerate(matched):
        mine = unsure_q == i
        sure = np.flatnonzero(surely[i])
        beating = np.concatenate([sure, unsure_r[mine & at_least]])
        better = np.concatenate([sure, unsure_r[mine & above]])
        count_at_least(out, q, beating, better, int(original[q]), lay)
    return out


def exact_block_ranks(scores: np.ndarray, original: np.ndarray, lay: Layout) -> Ranks:
    """Ranks from a block's exact score matrix (distances.block_scores), l1 or d1."""
    out = Ranks.zeros(len(scores), len(lay.sizes))
    for q in np.flatnonzero(original >= 0):
        target = scores[q, original[q]]
        beating = np.flatnonzero(scores[q] >= target)
        better = np.flatnonzero(scores[q] > target)
        count_at_least(out, q, beating, better, int(original[q]), lay)
    return out


def searcher(
    xb: np.ndarray, metric: str, reference_order: np.ndarray, max_norm: float | None = None
) -> descriptor_spec.Searcher:
    """The descriptor track's flat searcher over ``xb`` for any distance: FAISS searches l2
    and ip; for l1 and d1 it only carries the vectors and the id order (search_block
    scores every pair itself)."""
    faiss_metric = metric if metric in distances.FAISS_METRICS else "l2"
    norm = descriptor_spec.largest_norm(xb) if max_norm is None else max_norm
    s = descriptor_spec.flat_searcher(xb, faiss_metric, reference_order, norm)
    s.metric = metric
    return s


def search_block(
    s: descriptor_spec.Searcher, x: np.ndarray, original: np.ndarray, lay: Layout, knn: int
) -> tuple[descriptor_spec.Found, Ranks]:
    """A block's kNN pairs and ranks: FAISS proposes and pairs are rescored for l2 and ip;
    l1 and d1 score every pair of the block exactly (distances.block_scores)."""
    if s.metric in distances.FAISS_METRICS:
        return descriptor_spec.knn(s, x, knn), block_ranks(s, x, original, lay)
    scores = distances.block_scores(x, s.vectors, s.metric)
    return distances.top_k(scores, s.reference_order, knn), exact_block_ranks(scores, original, lay)


def rank_pass(
    spark: SparkSession,
    queries: pd.DataFrame,
    xq: np.ndarray,
    ref_ids: np.ndarray,
    xb: np.ndarray,
    metric: str,
    lay: Layout,
    knn: int,
    partitions: int,
) -> DataFrame:
    """`queries` (submission, query_id, original) with their vectors `xq` → one frame of
    kNN pairs (kind 0) and ranks (kind 1), persisted: the caller reads both."""
    xb = np.ascontiguousarray(xb, dtype=np.float32)
    shipped = spark.sparkContext.broadcast(
        {
            "xb": xb,
            "ids": np.asarray(ref_ids, dtype=object),
            "rank": descriptor_spec.reference_order(np.asarray(ref_ids)),
            "max_norm": descriptor_spec.largest_norm(xb),
            "layout": lay,
        }
    )
    table = pd.DataFrame(
        {
            "submission": queries.submission.astype("int32"),
            "query_id": queries.query_id.astype(str),
            "original": queries.original.astype("int64"),
            "vector": [np.ascontiguousarray(v, dtype=np.float32).tobytes() for v in xq],
        }
    )
    frame = spark.createDataFrame(
        table, "submission int, query_id string, original long, vector binary"
    ).repartition(partitions)
    dim = xb.shape[1]

    def search_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ref = shipped.value
        s = searcher(ref["xb"], metric, ref["rank"], ref["max_norm"])
        block = max(1, SCORES_PER_BLOCK // max(1, len(ref["xb"])))
        for batch in batches:
            subs = batch.column("submission").to_numpy()
            qids = np.asarray(batch.column("query_id").to_pylist(), dtype=object)
            orig = batch.column("original").to_numpy()
            vecs = batch.column("vector").to_pylist()
            for a in range(0, len(qids), block):
                sl = slice(a, a + block)
                x = np.frombuffer(b"".join(vecs[sl]), dtype=np.float32).reshape(-1, dim)
                pairs, r = search_block(s, x, orig[sl], ref["layout"], knn)
                yield _block_batch(subs[sl], qids[sl], pairs, r, ref["ids"])

    return frame.mapInArrow(search_partition, OUTPUT).persist(StorageLevel.MEMORY_AND_DISK)


def _block_batch(
    subs: np.ndarray, qids: np.ndarray, pairs: descriptor_spec.Found, r: Ranks, ids: np.ndarray
) -> pa.RecordBatch:
    """One block's rows of ``rank_pass``: its kNN pairs (kind 0), then one rank row per
    query (kind 1); ``subs``, ``qids``: the block's submissions and query ids, ``ids``
    the reference ids by position."""
    n_pairs, n_q = len(pairs), len(qids)
    return pa.RecordBatch.from_pydict(
        {
            "kind": np.r_[np.full(n_pairs, PAIR), np.full(n_q, RANK)].astype(np.int32),
            "submission": np.r_[subs[pairs.query], subs].astype(np.int32),
            "query_id": list(qids[pairs.query]) + list(qids),
            "reference_id": list(ids[pairs.reference]) + [None] * n_q,
            "score": np.r_[pairs.score, np.zeros(n_q)].astype(np.float64),
            "rank": np.r_[np.zeros(n_pairs, np.int64), r.rank],
            "rank_in_subset": np.r_[np.zeros(n_pairs, np.int64), r.rank_in_subset],
            "rank_by_size": [None] * n_pairs + [list(v) for v in r.rank_by_size],
            "better": np.r_[np.zeros(n_pairs, np.int64), r.better],
            "better_in_subset": np.r_[np.zeros(n_pairs, np.int64), r.better_in_subset],
            "better_by_size": [None] * n_pairs + [list(v) for v in r.better_by_size],
        },
        schema=_ARROW,
    )


def pairs_of(result: DataFrame) -> DataFrame:
    return result.where(F.col("kind") == PAIR).select(
        "submission", "query_id", "reference_id", "score"
    )


def ranks_of(result: DataFrame) -> pd.DataFrame:
    """One row per query, in query id order: the order partitions arrive in is not the
    data's, and every table and resample drawn from these rows follows their order."""
    return (
        result.where(F.col("kind") == RANK)
        .select(
            "query_id",
            "rank",
            "rank_in_subset",
            "rank_by_size",
            "better",
            "better_in_subset",
            "better_by_size",
        )
        .toPandas()
        .sort_values("query_id", kind="stable", ignore_index=True)
    )
