"""The distributed search: each query partition searched against every shard of the
reference index (shipping.py brings them to the executors) and turned into candidate
pairs, then one global cut for --max-results.

The per-partition work is spec.py's (the single-machine code); this module only moves
it onto Spark: how partitions are searched, and how the global top N is found without
collecting the pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from disc21spark.core import faults
from disc21spark.core.spark import union_all
from disc21spark.descriptors import spec as descriptor_spec
from disc21spark.descriptors.query_side import vectors_of
from disc21spark.descriptors.shipping import Shard, searcher_of

PAIR_SCHEMA = T.StructType(
    [
        T.StructField("query_id", T.StringType()),
        T.StructField("qpos", T.LongType()),
        T.StructField("reference_id", T.StringType()),
        T.StructField("rrank", T.LongType()),  # the reference's position in id order
        T.StructField("score", T.DoubleType()),
    ]
)
SKETCH_POINTS = 1024  # sampled ranks per partition for the global cut's bound


@dataclass(frozen=True)
class SearchSpec:
    metric: str
    knn: int | None  # K nearest per query, or None: the best max_results pairs overall
    max_results: int
    norm: tuple[int, int, float] | None = None  # first, last neighbour, weight
    block_rows: int = 16384  # at most this many queries searched at a time in a task


def _pairs_batch(ids: np.ndarray, qpos: np.ndarray, p: descriptor_spec.Found, s):
    return pa.RecordBatch.from_arrays(
        [
            pa.array(ids[p.query], pa.string()),
            pa.array(qpos[p.query], pa.int64()),
            pa.array(s.ids[p.reference], pa.string()),
            pa.array(s.reference_order[p.reference], pa.int64()),
            pa.array(p.score, pa.float64()),
        ],
        names=[f.name for f in PAIR_SCHEMA],
    )


def _search_partition(batches, index: Shard, background: Shard | None, spec: SearchSpec):
    import faiss
    from pyspark import TaskContext

    faults.in_task()
    faiss.omp_set_num_threads(max(1, int(TaskContext.get().cpus())))
    ids_parts, pos_parts, vec_parts = [], [], []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        ids_parts.append(np.asarray(batch.column("query_id").to_pylist(), dtype=object))
        pos_parts.append(batch.column("qpos").to_numpy())
        vec_parts.append(vectors_of(batch.column("vector"), batch.num_rows))
    if not ids_parts:
        return
    ids, qpos = np.concatenate(ids_parts), np.concatenate(pos_parts)
    xq = np.ascontiguousarray(np.vstack(vec_parts))
    del vec_parts
    s = searcher_of(index, "index")
    bg = searcher_of(background, "background") if background is not None else None
    best = descriptor_spec.Found.empty()
    # blocks of equal size: a tiny last block would make the bounded search's kNN deep
    n_blocks = -(-len(xq) // spec.block_rows)
    cuts = [round(i * len(xq) / n_blocks) for i in range(n_blocks + 1)]
    for a, b in zip(cuts[:-1], cuts[1:]):
        block = xq[a:b]
        shift = None
        if bg is not None and spec.norm is not None:
            first, last, weight = spec.norm
            shift = descriptor_spec.offsets(bg, block, first, last, weight)
        if spec.knn is not None:
            p = descriptor_spec.normalised_knn(s, block, spec.knn, shift)
            p.query = p.query + a
            if len(p):
                yield _pairs_batch(ids, qpos, p, s)
        else:
            p = descriptor_spec.bounded(s, block, spec.max_results, shift)
            p.query = p.query + a
            best = descriptor_spec.keep_best(descriptor_spec.concat([best, p]), spec.max_results)
    if spec.knn is None and len(best):
        yield _pairs_batch(ids, qpos, best, s)


def candidate_pairs(
    queries: DataFrame, shards: list[Shard], background: Shard | None, spec: SearchSpec
) -> DataFrame:
    """Each (query partition, shard) searched on the executors: for kNN the K best
    references per query and shard, for max-results the partition's best N pairs."""
    frames = [
        queries.select("query_id", "qpos", "vector").mapInArrow(
            partial(_search_partition, index=shard, background=background, spec=spec), PAIR_SCHEMA
        )
        for shard in shards
    ]
    pairs = union_all(frames)
    if spec.knn is not None and len(shards) > 1:
        # the K best per query over all shards, ties by reference id as within a shard
        order = Window.partitionBy("qpos").orderBy(F.desc("score"), F.asc("rrank"))
        pairs = pairs.withColumn("_r", F.row_number().over(order)).where(F.col("_r") <= spec.knn)
        pairs = pairs.drop("_r")
    return pairs


def _sketch(batches, points: int):
    from pyspark import TaskContext

    scores = [b.column("score").to_numpy() for b in batches if b.num_rows]
    part = TaskContext.get().partitionId()
    s = -np.sort(-np.concatenate(scores)) if scores else np.zeros(0)
    m = len(s)
    step = max(1, math.ceil(m / points))
    ranks = np.unique(np.r_[np.arange(step, m + 1, step), m]) if m else np.zeros(0, np.int64)
    yield pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(len(ranks), part), pa.int32()),
            pa.array(ranks, pa.int64()),
            pa.array(s[ranks - 1] if m else np.zeros(0), pa.float64()),
        ],
        names=["part", "rank", "score"],
    )


def lower_bound(sketch: pa.Table, n: int) -> float | None:
    """The highest score t such that at least n pairs surely score ≥ t, from each
    partition's sampled (rank, score) points; None when there are at most n pairs."""
    parts = sketch.column("part").to_numpy()
    ranks = sketch.column("rank").to_numpy()
    scores = sketch.column("score").to_numpy()
    per_part = []
    total = 0
    for p in np.unique(parts):
        sel = parts == p
        r, s = ranks[sel], scores[sel]
        order = np.argsort(r)
        per_part.append((r[order], s[order]))
        total += int(r.max())
    if total <= n:
        return None
    candidates = np.unique(scores)  # ascending; "surely" falls as t rises

    def surely(t: float) -> int:
        # per partition, scores fall as ranks rise: the ranks scoring ≥ t form a prefix
        total = 0
        for r, s in per_part:
            k = int(np.searchsorted(-s, -t, side="right"))
            total += int(r[k - 1]) if k else 0
        return total

    lo, hi = 0, len(candidates) - 1  # surely(candidates[0]) == total > n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if surely(candidates[mid]) >= n:
            lo = mid
        else:
            hi = mid - 1
    return float(candidates[lo])


def global_cut(pairs: DataFrame, n: int, points: int = SKETCH_POINTS) -> DataFrame:
    """Exactly the n best pairs (score desc, then query id, then reference id) of a
    persisted pair frame."""
    keep = cut_condition(pairs, n, points)
    return pairs if keep is None else pairs.where(keep)


def cut_condition(pairs: DataFrame, n: int, points: int = SKETCH_POINTS) -> Column | None:
    """The condition that holds for exactly the n best pairs (score desc, then query id,
    then reference id) of a persisted pair frame; None when every pair is among them.
    The driver sees a sample of sorted scores per partition, then the scores above the
    bound it gives (about n values), never the pairs."""
    sketch = pairs.select("score").mapInArrow(
        partial(_sketch, points=points), "part int, rank long, score double"
    )
    bound = lower_bound(sketch.toArrow(), n)
    if bound is None:
        return None
    above = pairs.where(F.col("score") >= bound).select("score").toArrow()
    scores = above.column("score").to_numpy()
    cut = float(np.partition(scores, len(scores) - n)[len(scores) - n])
    better = int((scores > cut).sum())
    tied = int((scores == cut).sum())
    need = n - better
    if need == tied:
        return F.col("score") >= cut
    keys = pairs.where(F.col("score") == cut).select("query_id", "rrank").toArrow()
    qids = np.asarray(keys.column("query_id").to_pylist(), dtype=object)
    rr = keys.column("rrank").to_numpy()
    last = np.lexsort((rr, qids))[need - 1]
    cq, cr = str(qids[last]), int(rr[last])
    q, r, s = F.col("query_id"), F.col("rrank"), F.col("score")
    within = (q < F.lit(cq)) | ((q == F.lit(cq)) & (r <= F.lit(cr)))
    return (s > cut) | ((s == cut) & within)
