"""Global sort positions by counting: what every partition counts and how the driver adds it.

In the pessimistic order (decreasing score, non-matching pairs first among equal scores)
the k-th true pair, true pairs taken by decreasing score, sits at global position

    k + (non-matching pairs scoring at least as high as it)

since every true pair ranked before it is one of the k − 1 before it, and every
non-matching pair of equal score precedes it. So the driver needs, for each distinct true
score t of a submission, one count: its non-matching pairs with score ≥ t. A partition
counts its own rows against the sorted true scores (``searchsorted``, then a suffix sum of
a histogram) and the driver adds the partitions' counts: integers, so the sum, hence every
position and figure, is the same for any partitioning.

The rank of a true pair behind recall@1/@10 (its query's predictions scoring ≥ it, itself
excluded) is counted the same way, per query: a row of a query holding true pairs counts
for each of them whose score it reaches.

Nothing here imports PySpark: ``count_rows`` runs on numpy arrays (the executors call it
on Arrow batches), ``TrueScores`` is what the driver broadcasts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from disc21spark.matching import kernel
from disc21spark.matching.kernel import assemble, peak_points, thin_curve
from disc21spark.matching.model import GroundTruth, MatchingMetrics


@dataclass(frozen=True)
class TrueScores:
    """One submission's predicted true pairs, as every partition counts against them.

    ``ascending``: float64, the distinct true scores, ascending (the kernel's levels, which
    decrease, turned over: ``searchsorted`` and Spark's ``Bucketizer`` take them so).
    ``query``, ``score``: int64 and
    float64 per true pair, sorted by (query, score). ``groups``: the distinct queries of
    ``query`` (ascending), ``starts``: where each begins in ``query`` (len(groups) + 1 ends).
    """

    ascending: np.ndarray
    query: np.ndarray
    score: np.ndarray
    groups: np.ndarray
    starts: np.ndarray

    @classmethod
    def of(cls, query: np.ndarray, score: np.ndarray) -> TrueScores:
        query = np.asarray(query, dtype=np.int64)
        score = np.asarray(score, dtype=np.float64) + 0.0  # -0.0 ties with 0.0
        order = np.lexsort((score, query))
        query, score = query[order], score[order]
        groups, starts = np.unique(query, return_index=True)
        return cls(
            ascending=kernel.distinct(score),
            query=query,
            score=score,
            groups=groups,
            starts=np.append(starts, len(query)).astype(np.int64),
        )

    def __len__(self) -> int:
        return len(self.query)

    @property
    def levels(self) -> np.ndarray:
        """float64 (T,): the distinct true scores, decreasing (the kernel's levels)."""
        return self.ascending[::-1]


@dataclass(frozen=True)
class QueryStats:
    """One submission's pairs, its pairs of queries not in the ground truth, and its
    distinct queries."""

    n_predictions: int
    n_unknown_query_predictions: int
    n_queries_with_predictions: int


EMPTY = TrueScores.of(np.zeros(0, dtype=np.int64), np.zeros(0))


@dataclass
class Counts:
    """What one submission's rows (a partition's, or all partitions' added) count.

    ``misses_ge[i]``: non-matching rows scoring ≥ ``ascending[i]``; ``ranks_ge[j]``: rows of
    true pair j's query scoring ≥ it (itself included); ``n``: rows; ``bottom``: the
    lowest score (+inf without rows)."""

    n: int
    bottom: float
    misses_ge: np.ndarray
    ranks_ge: np.ndarray

    @classmethod
    def zero(cls, truth: TrueScores) -> Counts:
        return cls(
            0,
            float("inf"),
            np.zeros(len(truth.ascending), np.int64),
            np.zeros(len(truth), np.int64),
        )

    def add(self, other: Counts) -> None:
        self.n += other.n
        self.bottom = min(self.bottom, other.bottom)
        self.misses_ge += other.misses_ge
        self.ranks_ge += other.ranks_ge


def count_rows(
    truth: TrueScores,
    query: np.ndarray,
    label: np.ndarray,
    score: np.ndarray,
    reached: np.ndarray,
) -> Counts:
    """The counts of one submission's rows (int64 query codes, bool labels, float64
    scores); ``reached``: int (misses,), how many levels each miss reaches, in row order
    (``stats.weighted.Reach.of(truth.levels, misses)``, which the intervals share)."""
    # a suffix sum turns the histogram of the levels reached into "≥ level i"
    hist = np.bincount(reached, minlength=len(truth.ascending) + 1)
    misses_ge = np.cumsum(hist[::-1])[::-1][1:].astype(np.int64)
    # + 0.0: a lowest score of -0.0 is reported as 0.0, as the specification does
    bottom = float(score.min()) + 0.0 if len(score) else float("inf")
    return Counts(len(score), bottom, misses_ge, ranks_ge(truth, query, score))


def ranks_ge(
    truth: TrueScores, query: np.ndarray, score: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """int64 (len(truth),): for each true pair, the rows (int64 query codes, float64
    scores) of its query scoring ≥ it; ``weights`` (int64, None: ones): how many rows
    each stands for (a small input's counts per query, ``spark.plan``). The distributed
    plan gives it the true pairs themselves, and counts the non-matches in the JVM."""
    if not len(truth) or not len(query):
        return np.zeros(len(truth), dtype=np.int64)
    g = _group_of(truth.groups, query)
    mine = g >= 0
    g, x = g[mine], score[mine]
    w = None if weights is None else weights[mine]
    first = truth.starts[g]
    # true pairs of a query are sorted by score: a row reaches those of its query from the
    # first up to the last scoring ≤ it; one key orders (query, score) across queries
    level_of_true = np.searchsorted(truth.ascending, truth.score, "left")
    width = len(truth.ascending) + 1
    true_key = np.searchsorted(truth.groups, truth.query) * width + level_of_true
    row_key = g * width + np.searchsorted(truth.ascending, x, "right") - 1
    last = np.searchsorted(true_key, row_key, "right")
    # each row adds one to the range [first, last): a difference array, then a running sum
    size = len(truth) + 1
    # weighed, bincount adds in float64: whole numbers below 2**53, so exact
    out = np.bincount(first, w, minlength=size) - np.bincount(last, w, minlength=size)
    return np.cumsum(out)[:-1].astype(np.int64)


def _group_of(groups: np.ndarray, query: np.ndarray) -> np.ndarray:
    """int64 (n,): the index in ``groups`` (distinct int64, ascending) of each of
    ``query`` (int64 (n,)), -1 where absent. Codes of a ground truth's queries (from 0,
    at most a few per row) by a table, one gather: a binary search per row was a fifth
    of a 500,000-pair file's scoring."""
    top = int(groups[-1])
    if groups[0] >= 0 and top < 4 * len(query) + (1 << 16):
        table = np.full(top + 2, -1, dtype=np.int64)  # the last: every code not in groups
        table[groups] = np.arange(len(groups))
        return table[np.clip(query, -1, top + 1)]
    g = np.minimum(np.searchsorted(groups, query), len(groups) - 1)
    return np.where(groups[g] == query, g, -1)


def positions(truth: TrueScores, counts: Counts) -> tuple[np.ndarray, np.ndarray]:
    """(1-based global positions, scores) of the true pairs in the pessimistic order."""
    scores = np.sort(truth.score)[::-1]
    k = np.arange(1, len(scores) + 1, dtype=np.int64)
    level = np.searchsorted(truth.ascending, scores, "left")
    return k + counts.misses_ge[level], scores


def ranks(counts: Counts) -> np.ndarray:
    """Rank (0 = first) of every predicted true pair among its query's predictions."""
    return counts.ranks_ge - 1


def finish(
    truth: TrueScores,
    counts: Counts,
    n_positives: int,
    max_curve_points: int,
) -> tuple[float, tuple, object]:
    """μAP, P90 operating point and PR curve from the counts of the submission's rows."""
    pos, thr = positions(truth, counts)
    # the kernel's per-level counts, levels decreasing: true pairs of each level, and the
    # non-matches from it (ties included) up to the level above
    up = truth.ascending
    hits = np.bincount(np.searchsorted(up, truth.score), minlength=len(up))[::-1]
    k_end = np.cumsum(hits)
    n_end = counts.misses_ge[::-1] + k_end
    micro_ap = kernel.micro_ap(hits, k_end, n_end, n_positives)
    (best,) = kernel.p90_levels(k_end, n_end)
    point, keep = (None, None, None), None
    if best >= 0:
        k, n = int(k_end[best]), int(n_end[best])
        point = (k / n, k / n_positives, float(truth.levels[best]))
        keep = k - 1  # the level's last true positive, among the curve's peaks
    ntp = np.arange(1, len(pos) + 1)
    n_tp = len(pos)
    if counts.n and (n_tp == 0 or pos[-1] != counts.n):
        ntp = np.append(ntp, n_tp)
        pos = np.append(pos, counts.n)
        thr = np.append(thr, counts.bottom)
    curve = thin_curve(peak_points(ntp, pos, thr, n_positives), max_curve_points, keep)
    return micro_ap, point, curve


def metrics_from_parts(
    gt: GroundTruth,
    truth: TrueScores,
    counts: Counts,
    stats: QueryStats,
    max_curve_points: int,
) -> MatchingMetrics:
    """Assemble one submission's metrics from the plan's small outputs."""
    if counts.n != stats.n_predictions:
        raise RuntimeError(f"internal error: counted {counts.n} pairs of {stats.n_predictions}")
    micro_ap, point, curve = finish(truth, counts, gt.n_positives, max_curve_points)
    return assemble(
        gt,
        micro_ap,
        point,
        ranks(counts),
        curve,
        n_predictions=counts.n,
        n_true_positives=len(truth),
        n_queries_with_predictions=stats.n_queries_with_predictions,
        n_unknown_query_predictions=stats.n_unknown_query_predictions,
    )
