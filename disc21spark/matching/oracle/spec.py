"""Exact single-machine DISC21 matching-track metrics: the specification.

Every figure follows the official ISC2021 scorer (``isc/metrics.py`` of
facebookresearch/isc2021) position by position:

* pairs sorted by decreasing score, and among equal scores the non-matching
  pairs first (the pessimistic order: a constant score earns nothing);
* ``precision(i) = tp(i) / i`` and ``recall(i) = tp(i) / n_positives``;
* μAP = Σ (recall(i) − recall(i−1)) · precision(i), recall(0) = 0;
* recall at P90: the highest recall among positions with precision ≥ 0.9, and
  the score of the earliest such position;
* the rank of a ground-truth pair: the number of that query's predictions with a
  score ≥ the true pair's score, minus one (infinite when the pair is absent).

The ids only matter through equality, so ``evaluate`` turns them into integer codes first
(``encode``) and ``evaluate_encoded`` computes every figure from the codes. This module is
the tests' oracle: no production module imports it (the engines count, then
``kernel.py`` makes the figures, and the tests hold both equal to this).

The one deliberate difference: the μAP terms are added with ``math.fsum`` (the
correctly rounded sum) rather than numpy's pairwise sum, so that the Spark plan,
which adds the same terms in another order, gives the same bits for any number
of partitions. The two sums differ by at most a few ulps (< 1e-15).

The Spark plan in ``plan.py`` must give exactly what this module gives; the
tests hold them equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from disc21spark.matching.kernel import (
    DEFAULT_CURVE_POINTS,
    REQUIRED_PRECISION,
    assemble,
    peak_points,
    thin_curve,
)
from disc21spark.matching.model import GroundTruth, MatchingMetrics


@dataclass(frozen=True)
class RowCodes:
    """One submission's rows as integer codes, all that its figures depend on: int64,
    bool, float64 arrays of shape (n,)."""

    query: np.ndarray  # int64: equal codes, same query id
    pair: np.ndarray  # int64: equal codes, same (query id, reference id)
    label: np.ndarray  # bool: a ground-truth pair
    score: np.ndarray  # float64
    unknown: np.ndarray  # bool: the query is not in the ground truth
    query_ids: Any = None  # the distinct query ids by code, when the encoder keeps them


def has_repeats(codes: np.ndarray) -> bool:
    """True when two of the integer codes (any shape (n,)) are equal."""
    ordered = np.sort(codes)
    return bool((ordered[1:] == ordered[:-1]).any())


def distinct(codes: np.ndarray) -> int:
    """Distinct values of non-negative integer codes."""
    return int(np.count_nonzero(np.bincount(codes))) if len(codes) else 0


def pessimistic_order(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Indices sorting pairs by decreasing score, non-matches before matches on ties."""
    # lexsort is stable and sorts by the last key first
    return np.lexsort((labels.astype(np.int8), -scores))


def label_pairs(query_ids: np.ndarray, reference_ids: np.ndarray, gt: GroundTruth) -> np.ndarray:
    """True where (query, reference) is a ground-truth positive pair."""
    import pandas as pd  # here, not above: the in-process engine never needs pandas

    positives = pd.MultiIndex.from_arrays([gt.positive_queries, gt.positive_references])
    pairs = pd.MultiIndex.from_arrays([query_ids, reference_ids])
    return np.asarray(pairs.isin(positives), dtype=bool)


def operating_point(
    precision: np.ndarray, recall: np.ndarray, threshold: np.ndarray, required: float
) -> tuple[float | None, float | None, float | None]:
    """(precision, recall, threshold) at the highest recall with precision ≥ required."""
    valid = np.flatnonzero(precision >= required)
    if valid.size == 0:
        return None, None, None
    # argmax returns the first of equal maxima: the earliest position in sorted order
    best = valid[np.argmax(recall[valid])]
    return float(precision[best]), float(recall[best]), float(threshold[best])


def true_pair_ranks(query: np.ndarray, score: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Rank (0 = first) of every predicted ground-truth pair among its query's predictions:
    how many of them score at least as high, itself excluded. ``query``: integer codes
    from 0 (the codes of ``encode``)."""
    if not label.any():
        return np.zeros(0, dtype=np.int64)
    # only the queries holding a true pair matter
    wanted = np.zeros(int(query.max()) + 1, dtype=bool)
    wanted[query[label]] = True
    rows = np.flatnonzero(wanted[query])
    query, score, label = query[rows], score[rows], label[rows]
    # one integer key per row that sorts by query, then by decreasing score
    levels, level = np.unique(-score, return_inverse=True)
    level = level.reshape(-1)
    key = query.astype(np.int64) * len(levels) + level
    ordered = np.sort(key)
    first_of_query = np.searchsorted(ordered, key[label] - level[label], "left")
    return np.searchsorted(ordered, key[label], "right") - first_of_query - 1


def encode(
    query_ids: np.ndarray, reference_ids: np.ndarray, scores: np.ndarray, gt: GroundTruth
) -> RowCodes:
    """String ids to codes (the Arrow engine encodes its own way, to the same effect)."""
    import pandas as pd  # here, not above: the in-process engine never needs pandas

    query_ids = np.asarray(query_ids, dtype=object)
    reference_ids = np.asarray(reference_ids, dtype=object)
    query, queries = pd.factorize(query_ids)
    reference, references = pd.factorize(reference_ids)
    return RowCodes(
        query=query.astype(np.int64),
        pair=query.astype(np.int64) * max(len(references), 1) + reference,
        label=label_pairs(query_ids, reference_ids, gt),
        score=np.asarray(scores, dtype=np.float64),
        unknown=~pd.Index(query_ids).isin(pd.Index(gt.query_ids)),
    )


def evaluate(
    query_ids: np.ndarray,
    reference_ids: np.ndarray,
    scores: np.ndarray,
    gt: GroundTruth,
    max_curve_points: int = DEFAULT_CURVE_POINTS,
) -> MatchingMetrics:
    """Score one matching-track submission exactly, in memory."""
    return evaluate_encoded(encode(query_ids, reference_ids, scores, gt), gt, max_curve_points)


def evaluate_encoded(
    e: RowCodes, gt: GroundTruth, max_curve_points: int = DEFAULT_CURVE_POINTS
) -> MatchingMetrics:
    """Every figure of one submission, from its codes."""
    scores = e.score + 0.0  # -0.0 and 0.0 tie, as in the official sort
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite")
    if has_repeats(e.pair):
        raise ValueError("predictions contain duplicate (query, reference) pairs")
    n_positives = gt.n_positives
    if n_positives == 0:
        raise ValueError("the ground truth has no positive pair")

    order = pessimistic_order(scores, e.label)
    y = e.label[order]
    thresholds = scores[order]
    ntp = np.cumsum(y)
    position = np.arange(1, len(y) + 1)
    precision = ntp / position
    recall = ntp / n_positives
    previous = np.concatenate([[0.0], recall[:-1]])
    micro_ap = math.fsum((recall - previous) * precision)

    p90, r90, t90 = operating_point(precision, recall, thresholds, REQUIRED_PRECISION)
    found = true_pair_ranks(e.query, scores, e.label)

    # the curve peaks at each true positive; the last point closes it
    marks = np.flatnonzero(y)
    if len(y) and (marks.size == 0 or marks[-1] != len(y) - 1):
        marks = np.append(marks, len(y) - 1)
    curve = peak_points(ntp[marks], position[marks], thresholds[marks], n_positives)
    keep = None
    if r90 is not None:
        keep = int(np.flatnonzero((curve.recall == r90) & (curve.threshold == t90))[0])

    return assemble(
        gt,
        micro_ap,
        (p90, r90, t90),
        found,
        thin_curve(curve, max_curve_points, keep),
        n_predictions=len(y),
        n_true_positives=int(y.sum()),
        n_queries_with_predictions=distinct(e.query),
        n_unknown_query_predictions=int(e.unknown.sum()),
    )
