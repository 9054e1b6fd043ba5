"""The bootstrap's counts: what the rows of one submission count in every resample, and
the figures of each resample from those counts (the kernel's, ``matching/kernel.py``).

The method, the weights and why the counts add up over any split of the rows:
``matching/oracle/bootstrap.py``, the specification these kernels are held equal to. Every engine calls
them: the in-process engine on its chunks, the Spark plan on its executors' blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from disc21spark.matching import kernel
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.stats import weights
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.product import weighted_sums
from disc21spark.matching.stats.weights import query_keys


def levels_of(true_scores: np.ndarray) -> np.ndarray:
    """float64 (T,): the distinct scores of the true pairs, decreasing."""
    return kernel.distinct(np.asarray(true_scores, dtype=np.float64))[::-1].copy()


def buckets(levels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """int64 (n,): the pessimistic bucket of each score, the first level it is ahead of
    or tied with; len(levels) for a score behind every level (it changes no figure)."""
    return np.searchsorted(-levels, -np.asarray(scores, dtype=np.float64), "left").astype(np.int64)


def weighted_counts(
    bucket: np.ndarray,
    keys: np.ndarray,
    fixed: np.ndarray,
    n_buckets: int,
    drawn: Drawn,
    count: np.ndarray | None = None,
) -> np.ndarray:
    """int64 (n_buckets, resamples): per bucket and resample, the sum of the rows' weights
    (``drawn``: the resampling and its table of weights). ``bucket`` int (n,), rows at
    n_buckets or more are left out; ``keys`` uint64 (n,) the rows' query keys; ``fixed``
    bool (n,): rows of weight 1 in every resample; ``count`` int (n,): how many rows each
    row stands for (None: one). Executors call this on their own rows and the partial
    counts add up to the whole."""
    b = drawn.r.resamples
    out = np.zeros((n_buckets, b), dtype=np.int64)
    if not b:  # no resample: nothing to weigh
        return out
    many = np.ones(len(bucket)) if count is None else np.asarray(count, np.float64)
    keep = bucket < n_buckets
    ones = keep & fixed
    if ones.any():
        # float64 sums of integers stay exact below 2^53
        fixed_sum = np.bincount(bucket[ones], weights=many[ones], minlength=n_buckets)
        out += np.rint(fixed_sum).astype(np.int64)[:, None]
    weighed = keep & ~fixed
    if weighed.any():  # integer sums: the order of the rows changes no count
        out += weighted_sums(
            bucket[weighed], keys[weighed], many[weighed], n_buckets, b, drawn.table
        )
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


@dataclass(frozen=True)
class Reach:
    """Scores placed among the levels by one search, which the figures' counts
    (``positions.count_rows``) and both orders' buckets (``miss_counts``) share: three
    searches over every non-match were made before. ``levels`` float64 (T,), decreasing;
    ``score`` float64 (n,); ``reached`` int64 (n,): how many levels each score is at or
    above."""

    levels: np.ndarray
    score: np.ndarray
    reached: np.ndarray

    @classmethod
    def of(cls, levels: np.ndarray, score: np.ndarray) -> Reach:
        score = np.asarray(score, dtype=np.float64)
        reached = np.searchsorted(levels[::-1], score, "right").astype(np.int64)
        return cls(levels, score, reached)


def miss_counts(
    reach: Reach,
    keys: np.ndarray,
    fixed: np.ndarray,
    drawn: Drawn,
    count: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """What the non-matching rows contribute, additive over any split of the rows:
    int64 (T, B) weighted per pessimistic bucket, int64 (T,) unweighted per optimistic one.
    ``reach``: the rows' scores among the levels (``Reach.of``); ``count``: how many rows
    each row stands for (None: one)."""
    levels, score = reach.levels, reach.score
    t = len(levels)
    # both orders' buckets from the one search: the pessimistic bucket is the levels
    # above the score, the optimistic one those at or above it
    above = t - reach.reached
    weighted = weighted_counts(above, keys, fixed, t, drawn, count)  # (T, 0) without resamples
    tied = above < t
    tied[tied] = levels[above[tied]] == score[tied]
    optimistic = np.bincount(above + tied, weights=count, minlength=t + 1)[:t]
    return weighted, np.rint(optimistic).astype(np.int64)


def true_counts(
    levels: np.ndarray,
    true_pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
    positive_keys: np.ndarray,
    drawn: Drawn,
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
    weighed = weighted_counts(bucket, at, np.zeros(len(at), dtype=bool), rows + 1, drawn)
    return weighed[:t], {k: weighed[t + i] for i, k in enumerate(ks)}, weighed[rows]


def uncertainty_of(
    levels: np.ndarray,
    misses: np.ndarray,
    optimistic: np.ndarray,
    true_pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
    drawn: Drawn,
) -> Uncertainty:
    """The figures from the non-matches' counts (``miss_counts``, summed), the true pairs
    (keys uint64, scores float64, ranks int64; any order, never an unknown query) and
    the positives (``drawn.positive_keys``)."""
    r, positive_keys = drawn.r, drawn.positive_keys
    hits, found, positives = true_counts(levels, true_pairs, positive_keys, drawn)
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


@dataclass(frozen=True)
class Drawn:
    """One ground truth's queries under one resampling, drawn once for every weighing of
    a run, a pool's files or a Spark job's tasks (``Drawn.of``): ``r``; ``keys`` uint64
    (Q,) each query's key (``weights.query_keys``, in the ground truth's order);
    ``positive_keys`` uint64 (P,) each positive pair's query's; ``table`` every query's
    weights (``weights.Table``; None: each weighing draws its rows' own, as the
    specification does)."""

    r: Resampling
    keys: np.ndarray
    positive_keys: np.ndarray
    table: weights.Table | None = None
    # the ground truth's query ids these keys are of (None: rows carrying their own keys)
    query_ids: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, gt: GroundTruth, r: Resampling) -> Drawn:
        """``gt``'s keys under ``r``'s seed and their table. Zeros and no table when
        ``r`` draws no resample: no weight is drawn, so no key is read (hashing 30,000
        ids was a tenth of a 500,000-pair run's scoring)."""
        if not r.resamples:
            zero = np.zeros(len(gt.query_ids), np.uint64)
            return cls(r, zero, np.zeros(gt.n_positives, np.uint64), None, gt.query_ids)
        keys = query_keys(gt.query_ids, r.seed)
        table = weights.Table.draw(keys, r.resamples)
        return cls(r, keys, positive_keys(gt, r.seed), table, gt.query_ids)

    def fits(self, gt: GroundTruth, r: Resampling) -> bool:
        """Whether these are ``gt``'s keys under ``r``'s draws (its query ids, the same
        resamples and seed; the confidence and groups draw nothing): what a caller
        hands down must be."""
        if (self.r.resamples, self.r.seed) != (r.resamples, r.seed):
            return False
        ids = self.query_ids
        same = ids is gt.query_ids or (ids is not None and np.array_equal(ids, gt.query_ids))
        return same and len(self.positive_keys) == gt.n_positives


def with_weights(gt: GroundTruth, settings: Any) -> Any:
    """``settings`` (``model.Settings``) carrying its resampling's keys and weights for
    ``gt`` (``Drawn.of``), drawn once for every file scored with them (a pool's workers,
    a Spark job's tasks); as given without resampling."""
    if settings.resampling is None:
        return settings
    return replace(settings, drawn=Drawn.of(gt, settings.resampling))


def drawn_for(gt: GroundTruth, settings: Any) -> Drawn | None:
    """The resampling's keys and weights for ``gt`` (None without resampling): those
    ``settings`` carries (``with_weights``), else drawn here, once a scoring. Raises
    ValueError when the ones carried were drawn for another ground truth or resampling."""
    r = settings.resampling
    if r is None:
        return None
    if settings.drawn is None:
        return Drawn.of(gt, r)
    if not settings.drawn.fits(gt, r):
        raise ValueError("the settings' resample weights were drawn for another ground truth")
    return replace(settings.drawn, r=r)  # the settings' confidence and groups


def positive_keys(gt: GroundTruth, seed: int) -> np.ndarray:
    """uint64 (P,): the query key of every positive pair of ``gt``."""
    unique, inverse = np.unique(gt.positive_queries.astype(str), return_inverse=True)
    return query_keys(unique, seed)[inverse.reshape(-1)]
