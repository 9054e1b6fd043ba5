"""Counts in, figures out: the one kernel every engine and plan of the matching track
finishes with (docs/design.md, "The counting contract").

The counts are per *level*, the distinct scores of a submission's true pairs taken in
decreasing order: ``hits[t]`` the true pairs scoring the level, ``misses[t]`` the
non-matching pairs in its pessimistic bucket (scoring from that level, ties included,
up to the level above). A column is one weighing of the rows: the figures are a column
of weight 1, each bootstrap resample a column of Poisson weights. In the pessimistic
order every non-match of a bucket precedes the level's true pairs, so the level's true
positives sit at (K − j, N − j), j = 0 … hits − 1, with K and N the running sums of the
levels down to it (``level_ends``); the official scorer's terms follow from those
positions alone.

Nothing here reads rows, imports PySpark or knows an engine; the single-machine
specification the kernel is held equal to is ``matching/oracle/spec.py``.
"""

from __future__ import annotations

import math

import numpy as np

from disc21spark.core import config
from disc21spark.matching.model import GroundTruth, MatchingMetrics, PRCurve

REQUIRED_PRECISION = 0.9
# the curve files stay readable and the plot light, whatever the input size: the evaluate
# command's --curve-points default (conf/defaults.ini)
DEFAULT_CURVE_POINTS: int = config.value("evaluate", "curve_points", int)
# recall at rank k: the figures' names and their k
RANKS = {"recall_at_rank1": 1, "recall_at_rank10": 10}
# columns (resamples) whose (levels × columns) temporaries are made at once; μAP's
# dense passes take as many levels at once
BLOCK = 64
# a pass of μAP over the resamples is dense while more than 1 / DENSE_SHARE of the
# (level, resample) entries hold a true positive it adds
DENSE_SHARE = 4


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D array without NaN, increasing: ``np.unique``'s
    result by its own steps (a sort, then each value unlike the one before), without
    its check for a masked array, which imports ``numpy.ma`` (a tenth of a second's
    start-up spent on nothing, for a run that never masks)."""
    ordered = np.sort(np.asarray(values).reshape(-1))
    keep = np.empty(len(ordered), dtype=bool)
    keep[:1] = True
    # the operator, not np.not_equal(out=): it compares text on every numpy (the ufunc's
    # text loops are recent)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def among(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """bool (n,): whether each of ``values`` is in ``ordered`` (increasing, as
    ``distinct`` gives): ``np.isin`` without its ``np.unique``."""
    if not len(ordered):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return ordered[at] == values


def running_sums(counts: np.ndarray) -> np.ndarray:
    """int64 (T, C): the sums of ``counts`` (int (T, C)) down to each level, a new array.
    Row by row: numpy's cumsum along the first axis runs five times slower here."""
    if np.ndim(counts) == 1:
        return np.cumsum(counts, dtype=np.int64)
    out = np.array(counts, dtype=np.int64)
    for level in range(1, len(out)):
        np.add(out[level], out[level - 1], out=out[level])
    return out


def level_ends(hits: np.ndarray, misses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int64 (T, C) each (or (T,) for (T,) counts): the true positives (K) and the position (N) of each level's
    last true pair, from the per-level counts (int (T, C))."""
    k_end = running_sums(hits)
    n_end = running_sums(misses)
    n_end += k_end
    return k_end, n_end


def micro_ap(
    hits: np.ndarray,
    k_end: np.ndarray,
    n_end: np.ndarray,
    positives: np.ndarray,
    exact_columns: int = 1,
) -> np.ndarray | float:
    """float64 (C,): μAP in every column (a float for one column given as (T,) arrays), the official scorer's terms
    (recall(i) − recall(i−1)) · precision(i) at each true positive. ``hits`` int (T, C);
    ``k_end``, ``n_end`` from ``level_ends``; ``positives`` int (C,), the ground truth's
    (weighted) positives. The first ``exact_columns`` are added with ``math.fsum``, the
    correctly rounded sum, so any order of counting gives the official figure's bits;
    the others (resamples) by ``np.bincount`` over the levels in order, a float64 sum
    whose bits the intervals have always had. A column without positives is NaN or inf
    (the caller leaves it out)."""
    if np.ndim(hits) == 1:
        one = micro_ap(hits[:, None], k_end[:, None], n_end[:, None], np.array([positives]))
        return float(one[0])
    columns = hits.shape[1]
    total = np.asarray(positives, dtype=np.float64)
    exact = min(exact_columns, columns)
    ap = np.zeros(columns)
    with np.errstate(divide="ignore", invalid="ignore"):
        for c in range(exact):
            mine = hits[:, c] > 0  # the column's levels holding true positives, in order
            k = k_end[mine, c].astype(np.float64)
            n = n_end[mine, c].astype(np.float64)
            ap[c] = math.fsum(_terms(*_each_true_positive(hits[mine, c], k, n), total[c]))
        if exact < columns:
            drawn = slice(exact, columns)
            ap[drawn] = _drawn_ap(hits[:, drawn], k_end[:, drawn], n_end[:, drawn], total[drawn])
    return ap


def _drawn_ap(hits: np.ndarray, k_end: np.ndarray, n_end: np.ndarray, total: np.ndarray):
    """float64 (C,): μAP in each column (resample) as ``np.bincount`` over the entries has
    always summed it: pass j adds up the j-th true positive of every (level, column) entry
    holding more than j, level by level, and each pass's sum is added to the total. While
    most entries hold more than j the pass is dense (a term of 0.0 where a level holds
    none: adding it changes no bit), then the entries left are visited; arguments as
    ``micro_ap``'s."""
    ap = np.zeros(hits.shape[1])
    j = 0
    # some entry holds more than j (no levels: none does, and no pass runs)
    while 0 < np.count_nonzero(hits > j) * DENSE_SHARE >= hits.size:
        ap += _dense_pass(hits, k_end, n_end, total, j)
        j += 1
    # entry e holds hits[e] true positives, at (k − i, n − i), i = 0 … hits[e] − 1
    entry = np.flatnonzero(hits > j)
    column = entry % hits.shape[1]
    left = hits.reshape(-1)[entry]
    k = k_end.reshape(-1)[entry].astype(np.float64) - j
    n = n_end.reshape(-1)[entry].astype(np.float64) - j
    while k.size:  # the j-th true positive of every entry at once
        ap += np.bincount(column, weights=_terms(k, n, total[column]), minlength=len(ap))
        j += 1
        more = left > j
        left, k, n, column = left[more], k[more] - 1, n[more] - 1, column[more]
    return ap


def _dense_pass(
    hits: np.ndarray, k_end: np.ndarray, n_end: np.ndarray, total: np.ndarray, j: int
) -> np.ndarray:
    """float64 (C,): the j-th true positives' terms of every column, added level by level."""
    out = np.zeros(hits.shape[1])
    for start in range(0, len(hits), BLOCK):
        rows = slice(start, start + BLOCK)
        k = k_end[rows].astype(np.float64)
        n = n_end[rows].astype(np.float64)
        if j:
            k -= j
            n -= j
        terms = _terms(k, n, total)
        terms[hits[rows] <= j] = 0.0
        for row in terms:  # level by level: numpy's sum along an axis may pair the terms
            out += row
    return out


def level_shares(
    hits: np.ndarray, k_end: np.ndarray, n_end: np.ndarray, positives: int
) -> np.ndarray:
    """float64 (T,): what each true pair of a level adds to μAP, one column's counts
    (int (T,), ``level_ends``): the mean of the scorer's terms at the level's true
    positives. Within a level the pessimistic order puts the true pairs after the ties
    in an order no query owns, so each takes an equal share; a level's shares add up to
    its terms (μAP's sum within rounding)."""
    hits = np.asarray(hits, dtype=np.int64)
    k, n = _each_true_positive(hits, k_end.astype(np.float64), n_end.astype(np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = _terms(k, n, float(positives))
    level = np.repeat(np.arange(len(hits)), hits)
    sums = np.bincount(level, weights=terms, minlength=len(hits))
    return sums / np.maximum(hits, 1)


def _each_true_positive(
    hits: np.ndarray, k: np.ndarray, n: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """float64 (Σ hits,) twice: (true positives, position) of every true positive of the
    entries (hits int, k and n float64 at each entry's last one)."""
    first = np.cumsum(hits) - hits
    j = np.arange(int(hits.sum())) - np.repeat(first, hits)
    return np.repeat(k, hits) - j, np.repeat(n, hits) - j


def _terms(k: np.ndarray, n: np.ndarray, p: np.ndarray | float) -> np.ndarray:
    """The scorer's term at true positive k, position n, of p positives: the recall's
    step times the precision, in its float operations."""
    return (k / p - (k - 1) / p) * (k / n)


def p90_levels(k_end: np.ndarray, n_end: np.ndarray) -> np.ndarray:
    """int64 (C,): in each column the level whose last true positive has the highest
    recall at precision ≥ 0.9 (-1: precision 0.9 is never reached). A level's last true
    positive dominates the level's others in recall and precision, so recall at P90, its
    precision and its threshold are those of the level's end (``level_ends``, (T, C) or
    (T,) for one column, then a (1,) result)."""
    k_end, n_end = np.atleast_2d(k_end.T).T, np.atleast_2d(n_end.T).T
    levels, columns = k_end.shape
    out = np.full(columns, -1, dtype=np.int64)
    if not levels:
        return out
    # a block of columns at a time: the (T, block) temporaries stay a few MB
    for start in range(0, columns, BLOCK):
        stop = min(start + BLOCK, columns)
        with np.errstate(divide="ignore", invalid="ignore"):
            reached = k_end[:, start:stop] / n_end[:, start:stop] >= REQUIRED_PRECISION
        # K grows down the levels: the last level reached has the highest recall
        last = levels - 1 - np.argmax(reached[::-1], axis=0)
        out[start:stop] = np.where(reached.any(axis=0), last, -1)
    return out


def recall_at_rank(ranks: np.ndarray, k: int) -> float:
    """Fraction of ground-truth pairs found within the first k predictions of their query
    (``ranks`` int (P,): 0 = first, -1 = never predicted)."""
    if ranks.size == 0:
        return 0.0
    return float(((ranks >= 0) & (ranks < k)).sum() / ranks.size)


def peak_points(
    ntp: np.ndarray, position: np.ndarray, threshold: np.ndarray, n_positives: int
) -> PRCurve:
    """The curve at the given (cumulative true positives, 1-based position, score) points."""
    return PRCurve(
        precision=ntp / position,
        recall=ntp / n_positives,
        threshold=np.asarray(threshold, dtype=np.float64),
    )


def thin_curve(curve: PRCurve, max_points: int, keep: int | None = None) -> PRCurve:
    """At most max_points evenly spaced points, first, last and `keep` always kept."""
    n = len(curve)
    if n <= max_points:
        return curve
    idx = np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))
    if keep is not None:
        idx = np.union1d(idx, [keep])
    return PRCurve(curve.precision[idx], curve.recall[idx], curve.threshold[idx])


def assemble(
    gt: GroundTruth,
    micro_ap: float,
    point: tuple[float | None, float | None, float | None],
    found_ranks: np.ndarray,
    curve: PRCurve,
    **counts: int,
) -> MatchingMetrics:
    """Every figure from its parts: μAP, the P90 point (precision, recall, threshold),
    the predicted true pairs' ranks (int64, 0 = first) and the curve; recall at rank k
    counts a true pair never predicted as never found. ``counts``: MatchingMetrics'
    row counts."""
    missing = np.full(gt.n_positives - len(found_ranks), -1, dtype=np.int64)
    ranks = np.concatenate([found_ranks, missing])
    p90, r90, t90 = point
    return MatchingMetrics(
        micro_ap=micro_ap,
        recall_at_p90=r90,
        threshold_at_p90=t90,
        precision_at_p90=p90,
        recall_at_rank1=recall_at_rank(ranks, RANKS["recall_at_rank1"]),
        recall_at_rank10=recall_at_rank(ranks, RANKS["recall_at_rank10"]),
        n_positives=gt.n_positives,
        n_queries=gt.n_queries,
        curve=curve,
        **counts,
    )
