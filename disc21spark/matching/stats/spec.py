"""Bootstrap intervals and tie sensitivity of the matching-track metrics: the specification.

The unit of resampling is the query with all its predictions and positives (μAP is not
a mean of per-query values). Resample ``b`` gives query ``q`` the weight w_b(q)
(``weights.py``: Poisson(1), a function of the seed, the query id and b); a query drawn
w times stands in the resampled benchmark as w copies under fresh ids, and each figure is
what the official scorer gives for that resampled submission. Predictions for queries
that the ground truth does not know keep the weight 1 in every resample: the bootstrap
draws from the benchmark's queries, and those predictions are no draw from it but a
fixed part of the submission (its false positives stay in every replicate, as they are
in the official figure; resampling them would let made-up ids change the interval).

Every resample shares the submission's one sort. Let the levels be the distinct scores
of the predicted true pairs, in decreasing order. In the pessimistic order all the
non-matching pairs scoring at least a level come before that level's true pairs, which
follow one another (their order inside the level changes no figure: each one adds 1 to
both the true positives and the position). So per level and resample only two weighted
counts are needed, the non-matches in the level's bucket (scores from that level down to
the next) and the true pairs of the level; the positions follow by cumulative sums:
K = Σ true-pair weights up to the level, N = Σ non-match weights up to it + K. The level's
true positives are at (K − j, N − j), j = 0 … m − 1 (m its weighted true pairs), and

* μAP_b = Σ over them of (k/P_b − (k−1)/P_b) · k/n, the official scorer's terms, with
  P_b the weighted positives of the ground truth;
* recall at P90_b = the largest K/P_b over levels with K/N ≥ 0.9 (a level's last true
  positive dominates the others), 0 where precision 0.9 is never reached;
* recall@k_b = the weighted true pairs of rank < k over P_b (ranks as in ``matching/spec.py``).

A resample in which no positive is drawn (P_b = 0) has no figure: NaN, left out of the
quantiles. Counts are integers, so every engine that adds the same weights in another
order gets the same counts, and the figures come from the counts by this module alone:
the intervals are the same bits on every engine, partitioning and file order.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from disc21spark.matching import spec as matching_spec
from disc21spark.matching.arrays import factorize
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.spec import REQUIRED_PRECISION
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.weights import poisson_weights, query_keys

# resamples whose weights are drawn at once: queries × CHUNK weights stay a few MB
CHUNK = 64


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
    for start in range(0, b, CHUNK):
        stop = min(start + CHUNK, b)
        # float64 products and sums of integers stay exact below 2^53
        w = poisson_weights(unique, start, stop).astype(np.float64)
        out[:, start:stop] += np.rint(counts @ w).astype(np.int64)
    return out


@dataclass(frozen=True)
class Counts:
    """One submission's weighted counts in every resample: all its replicates need."""

    misses: np.ndarray  # int64 (T, B): non-matches in each level's bucket (pessimistic)
    hits: np.ndarray  # int64 (T, B): true pairs of each level
    found: dict[int, np.ndarray]  # k -> int64 (B,): true pairs of rank < k
    positives: np.ndarray  # int64 (B,): the ground truth's positives


RANKS = {"recall_at_rank1": 1, "recall_at_rank10": 10}


def replicates(c: Counts) -> dict[str, np.ndarray]:
    """float64 (B,) per statistic (model.STATISTICS): the figure in each resample."""
    total = c.positives.astype(np.float64)
    k_end = running_sums(c.hits)
    n_end = running_sums(c.misses)
    n_end += k_end
    # only (level, resample) entries holding true positives add terms: visited sparsely,
    # in row-major order, and each resample's terms added by bincount in that order
    entry = np.flatnonzero(c.hits)
    column = entry % c.hits.shape[1]
    k = k_end.reshape(-1)[entry].astype(np.float64)
    n = n_end.reshape(-1)[entry].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        reached = k / n >= REQUIRED_PRECISION
        best = np.zeros(len(total))
        np.maximum.at(best, column[reached], k[reached])
        out = {
            "micro_ap": _micro_ap(c.hits.reshape(-1)[entry], k, n, column, total),
            "recall_at_p90": best / total,
        }
        out.update({name: c.found[k] / total for name, k in RANKS.items()})
    none = c.positives == 0
    return {name: np.where(none, np.nan, v) for name, v in out.items()}


def running_sums(counts: np.ndarray) -> np.ndarray:
    """int64 (T, B): the sums of ``counts`` (int (T, B)) down to each level, a new array.
    Row by row: numpy's cumsum along the first axis runs five times slower here."""
    out = np.array(counts, dtype=np.int64)
    for level in range(1, len(out)):
        np.add(out[level], out[level - 1], out=out[level])
    return out


def _micro_ap(
    hits: np.ndarray, k: np.ndarray, n: np.ndarray, column: np.ndarray, total: np.ndarray
) -> np.ndarray:
    """Σ per resample of the terms of every true positive: entry e (one level in one
    resample) holds hits[e] of them, at (k − j, n − j), j = 0 … hits[e] − 1."""
    ap = np.zeros(len(total))
    j = 0
    while k.size:
        p = total[column]
        ap += np.bincount(column, weights=(k / p - (k - 1) / p) * (k / n), minlength=len(total))
        j += 1
        more = hits > j
        hits, k, n, column = hits[more], k[more] - 1, n[more] - 1, column[more]
    return ap


def micro_ap_of_levels(hits: np.ndarray, misses: np.ndarray, n_positives: int) -> float:
    """The official μAP from per-level counts of one order (int (T,) each: true pairs of
    the level, non-matches in its bucket): its terms, added with ``math.fsum`` as the
    specification adds them, so the pessimistic counts give the official figure's bits."""
    k_end = np.cumsum(hits)
    n_end = np.cumsum(misses) + k_end
    k = np.concatenate([np.arange(e - h + 1, e + 1) for h, e in zip(hits, k_end)] or [[]])
    n = np.concatenate([np.arange(e - h + 1, e + 1) for h, e in zip(hits, n_end)] or [[]])
    p = float(n_positives)
    return math.fsum((k / p - (k - 1) / p) * (k / n))


@dataclass(frozen=True)
class Sample:
    """One submission as the bootstrap sees it (numpy arrays, one row per prediction)."""

    keys: np.ndarray  # uint64 (n,): query keys (weights.query_keys)
    unknown: np.ndarray  # bool (n,): the query is not in the ground truth (weight 1)
    score: np.ndarray  # float64 (n,)
    label: np.ndarray  # bool (n,)
    ranks: np.ndarray  # int64: rank of each true pair, in the order of the rows
    positive_keys: np.ndarray  # uint64 (P,): the query key of every ground-truth positive


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
    ks = list(RANKS.values())
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
    counts = Counts(misses=misses, hits=hits, found=found, positives=positives)
    level_hits = np.bincount(buckets(levels, true_pairs[1]), minlength=len(levels))
    return Uncertainty(
        resampling=r,
        replicates=replicates(counts) if r.resamples else {},
        micro_ap_optimistic=micro_ap_of_levels(level_hits, optimistic, len(positive_keys)),
    )


def uncertainty(s: Sample, r: Resampling) -> Uncertainty:
    """The intervals (when ``r.resamples`` > 0) and the optimistic μAP of one submission."""
    levels = levels_of(s.score[s.label])
    miss = ~s.label
    misses, optimistic = miss_counts(levels, s.score[miss], s.keys[miss], s.unknown[miss], r)
    true_pairs = (s.keys[s.label], s.score[s.label], s.ranks)
    return uncertainty_of(levels, misses, optimistic, true_pairs, s.positive_keys, r)


def bootstrap(
    query_ids: np.ndarray,
    reference_ids: np.ndarray,
    scores: np.ndarray,
    gt: GroundTruth,
    r: Resampling,
) -> Uncertainty:
    """One submission's Uncertainty from its columns, in memory: the specification the
    engines are held equal to."""
    e = matching_spec.encode(query_ids, reference_ids, scores, gt)
    score = e.score + 0.0
    sample = Sample(
        keys=query_keys(np.asarray(query_ids, dtype=object), r.seed),
        unknown=e.unknown,
        score=score,
        label=e.label,
        ranks=matching_spec.true_pair_ranks(e.query, score, e.label),
        positive_keys=positive_keys(gt, r.seed),
    )
    return uncertainty(sample, r)


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
