"""The bootstrap's counts: what the rows of one submission count in every resample, and
the figures of each resample from those counts (the kernel's, ``matching/kernel.py``).

The method, the weights and why the counts add up over any split of the rows:
``stats/spec.py``, the specification these kernels are held equal to. Every engine calls
them: the in-process engine on its chunks, the Spark plan on its executors' blocks.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from disc21spark.matching import kernel
from disc21spark.matching.arrays import factorize
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.weights import (
    MAX_WEIGHT,
    poisson_weights,
    query_keys,
)

# resamples whose weights are drawn at once: queries × CHUNK weights stay a few MB
CHUNK = 256
# the int16 product (``_small_rows``): a run of cells sums to at most SMALL_SUM, so times
# a weight (at most MAX_WEIGHT) it stays below 2^15; a cell holds at most SMALL_CELL
SMALL_SUM = (2**15 - 1) // MAX_WEIGHT
SMALL_CELL = SMALL_SUM // 2
# (query, resample) weights the int16 product takes at once: 64 MB of int16
SMALL_ENTRIES = 32 << 20


def levels_of(true_scores: np.ndarray) -> np.ndarray:
    """float64 (T,): the distinct scores of the true pairs, decreasing."""
    return np.unique(np.asarray(true_scores, dtype=np.float64))[::-1].copy()


def buckets(levels: np.ndarray, scores: np.ndarray, pessimistic: bool = True) -> np.ndarray:
    """int64 (n,): the first level each score is ahead of (pessimistic: ahead of or tied
    with); len(levels) for a score behind every level (it changes no figure)."""
    side = "left" if pessimistic else "right"
    return np.searchsorted(-levels, -np.asarray(scores, dtype=np.float64), side).astype(np.int64)


def weighted_counts(
    bucket: np.ndarray,
    keys: np.ndarray,
    fixed: np.ndarray,
    n_buckets: int,
    resampling: Resampling,
    count: np.ndarray | None = None,
) -> np.ndarray:
    """int64 (n_buckets, resamples): per bucket and resample, the sum of the rows' weights.
    ``bucket`` int (n,), rows at n_buckets or more are left out; ``keys`` uint64 (n,) the
    rows' query keys; ``fixed`` bool (n,): rows of weight 1 in every resample; ``count``
    int (n,): how many rows each row stands for (None: one). Executors call this on their
    own rows and the partial counts add up to the whole."""
    b = resampling.resamples
    out = np.zeros((n_buckets, b), dtype=np.int64)
    if not b:  # no resample: nothing to weigh (and no scipy to import)
        return out
    many = np.ones(len(bucket)) if count is None else np.asarray(count, np.float64)
    keep = bucket < n_buckets
    ones = keep & fixed
    if ones.any():
        # float64 sums of integers stay exact below 2^53
        fixed_sum = np.bincount(bucket[ones], weights=many[ones], minlength=n_buckets)
        out += np.rint(fixed_sum).astype(np.int64)[:, None]
    drawn = keep & ~fixed
    if not drawn.any():
        return out
    from scipy import sparse

    # integer sums: the order of the columns changes no count
    unique, column = factorize(keys[drawn])
    counts = sparse.csr_matrix(
        (many[drawn], (bucket[drawn], column)),
        shape=(n_buckets, len(unique)),
    )
    counts.sum_duplicates()
    small = _small_rows(counts)
    # the int16 product takes the weights of up to SMALL_ENTRIES (query, resample) at once
    # (one look-up in the table ``remember`` keeps, one pass of scipy's kernel: 3× faster
    # than 256 resamples at a time); the float64 one CHUNK resamples at a time
    step = max(CHUNK, SMALL_ENTRIES // len(unique)) if small is not None else CHUNK
    for start in range(0, b, step):
        stop = min(start + step, b)
        w = poisson_weights(unique, start, stop)
        if small is not None:
            out[:, start:stop] += _small_product(small, w.astype(np.int16), n_buckets)
        else:  # float64 products and sums of integers stay exact below 2^53
            out[:, start:stop] += np.rint(counts @ w.astype(np.float64)).astype(np.int64)
    return out


def _small_rows(counts) -> tuple | None:
    """``counts`` (a summed scipy CSR matrix (T, Q) of whole counts) split into int16 rows
    whose sums times the heaviest weight stay below 2^15, so that their products with the
    weights are exact in int16 (four times as fast as float64 here): each level's cells in
    runs summing to at most SMALL_SUM. (scipy CSC matrix int16 (R, Q), the first row of
    each level with cells int64 (L,), those levels int64 (L,)); None when a cell alone
    holds more than SMALL_CELL or a count is not whole."""
    from scipy import sparse

    data = np.rint(counts.data).astype(np.int64)
    if not len(data) or data.max() > SMALL_CELL or data.min() < 0:
        return None
    if not np.array_equal(data, counts.data):
        return None
    level = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    before = np.cumsum(data) - data
    before -= before[counts.indptr[level]]  # the level's count before each cell
    # a run holds the cells starting below a multiple of this: at most SMALL_SUM in all
    piece = before // (SMALL_SUM + 1 - SMALL_CELL)
    first = np.ones(len(data), dtype=bool)
    first[1:] = (level[1:] != level[:-1]) | (piece[1:] != piece[:-1])
    row = np.cumsum(first) - 1
    matrix = sparse.csc_matrix(
        (data.astype(np.int16), (row, counts.indices)), shape=(int(row[-1]) + 1, counts.shape[1])
    )
    levels, at = np.unique(level[first], return_index=True)
    return matrix, at, levels


def _small_product(small: tuple, w: np.ndarray, n_buckets: int) -> np.ndarray:
    """int64 (n_buckets, C): the counts ``_small_rows`` split, times the weights int16
    (Q, C), each level's rows added up."""
    matrix, at, levels = small
    product = matrix @ w  # int16 (R, C)
    out = np.zeros((n_buckets, w.shape[1]), dtype=np.int64)
    out[levels] = product[at]
    rows = np.diff(np.append(at, len(product)))
    more = rows > 1
    if more.any():  # the few levels of more than one row (np.add.reduceat casts slowly)
        mine = np.repeat(more, rows)
        starts = np.cumsum(rows[more]) - rows[more]
        out[levels[more]] = np.add.reduceat(product[mine].astype(np.int64), starts, axis=0)
    return out


@dataclass(frozen=True)
class WeightedCounts:
    """One submission's weighted counts in every resample: all its replicates need."""

    misses: np.ndarray  # int64 (T, B): non-matches in each level's bucket (pessimistic)
    hits: np.ndarray  # int64 (T, B): true pairs of each level
    found: dict[int, np.ndarray]  # k -> int64 (B,): true pairs of rank < k
    positives: np.ndarray  # int64 (B,): the ground truth's positives


def replicates(c: WeightedCounts) -> dict[str, np.ndarray]:
    """float64 (B,) per statistic (model.STATISTICS): the figure in each resample."""
    total = c.positives.astype(np.float64)
    k_end, n_end = kernel.level_ends(c.hits, c.misses)
    best = kernel.p90_levels(k_end, n_end)
    found = k_end[best, np.arange(len(best))] if len(k_end) else np.zeros(len(best))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {
            "micro_ap": kernel.micro_ap(c.hits, k_end, n_end, c.positives, exact_columns=0),
            "recall_at_p90": np.where(best >= 0, found, 0) / total,
        }
        out.update({name: c.found[k] / total for name, k in kernel.RANKS.items()})
    none = c.positives == 0
    return {name: np.where(none, np.nan, v) for name, v in out.items()}


def miss_counts(
    levels: np.ndarray,
    score: np.ndarray,
    keys: np.ndarray,
    fixed: np.ndarray,
    r: Resampling,
    count: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """What the non-matching rows contribute, additive over any split of the rows:
    int64 (T, B) weighted per pessimistic bucket, int64 (T,) unweighted per optimistic one.
    ``count``: how many rows each row stands for (None: one)."""
    t = len(levels)
    weighted = weighted_counts(buckets(levels, score), keys, fixed, t, r, count)
    optimistic = np.bincount(
        buckets(levels, score, pessimistic=False), weights=count, minlength=t + 1
    )[:t]
    return weighted, np.rint(optimistic).astype(np.int64)


def true_counts(
    levels: np.ndarray,
    true_pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
    positive_keys: np.ndarray,
    r: Resampling,
) -> tuple[np.ndarray, dict[int, np.ndarray], np.ndarray]:
    """What the true pairs (keys uint64, scores float64, ranks int64; any order, never an
    unknown query) and the positives contribute: int64 (T, B) weighted true pairs of each
    level, k -> int64 (B,) those of rank < k, int64 (B,) the weighted positives."""
    keys, scores, ranks = true_pairs
    t = len(levels)
    level = buckets(levels, scores)
    # one weighing for all the true pairs' counts (rows: the T levels, then rank < 1, rank
    # < 10, the ground truth's positives), so each query's weights are drawn once
    ks = list(kernel.RANKS.values())
    rows = t + len(ks)  # the positives' row; one more: left out
    found = [np.where(ranks < k, t + i, rows + 1) for i, k in enumerate(ks)]
    bucket = np.concatenate([level, *found, np.full(len(positive_keys), rows)])
    at = np.concatenate([keys, *([keys] * len(ks)), positive_keys])
    weighed = weighted_counts(bucket, at, np.zeros(len(at), dtype=bool), rows + 1, r)
    return weighed[:t], {k: weighed[t + i] for i, k in enumerate(ks)}, weighed[rows]


def uncertainty_of(
    levels: np.ndarray,
    misses: np.ndarray,
    optimistic: np.ndarray,
    true_pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
    positive_keys: np.ndarray,
    r: Resampling,
) -> Uncertainty:
    """The figures from the non-matches' counts (``miss_counts``, summed) and the true
    pairs (keys uint64, scores float64, ranks int64; any order, never an unknown query)."""
    hits, found, positives = true_counts(levels, true_pairs, positive_keys, r)
    counts = WeightedCounts(misses=misses, hits=hits, found=found, positives=positives)
    level_hits = np.bincount(buckets(levels, true_pairs[1]), minlength=len(levels))
    return Uncertainty(
        resampling=r,
        replicates=replicates(counts) if r.resamples else {},
        # the optimistic order's μAP: its buckets put the true pairs first among ties
        micro_ap_optimistic=kernel.micro_ap(
            level_hits, *kernel.level_ends(level_hits, optimistic), len(positive_keys)
        ),
    )


_known: tuple[weakref.ref, int, np.ndarray] | None = None  # query ids, seed, their keys


def ground_truth_keys(gt: GroundTruth, seed: int) -> np.ndarray:
    """uint64 (Q,): the key of each of ``gt``'s queries (``query_keys``), kept for the
    next call with the same ground truth and seed (a pool's files, a worker's tasks).
    The caller must not write into it."""
    global _known
    if _known is not None and _known[0]() is gt.query_ids and _known[1] == seed:
        return _known[2]
    keys = query_keys(gt.query_ids, seed)
    _known = (weakref.ref(gt.query_ids), seed, keys)
    return keys


def positive_keys(gt: GroundTruth, seed: int) -> np.ndarray:
    """uint64 (P,): the query key of every positive pair of ``gt``."""
    unique, inverse = np.unique(gt.positive_queries.astype(str), return_inverse=True)
    return query_keys(unique, seed)[inverse.reshape(-1)]
