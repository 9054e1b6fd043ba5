"""Per-query results (``--per-query``, trec_eval's ``-q``): one row per query of the
ground truth, distractors and queries without predictions included.

Two inputs, both small: the submission's predicted true pairs with their ranks and the
non-matches above each true score (what the scoring already counted, ``TrueRanks``), and
per query its predictions and its best-scoring wrong reference (``QueryRows``, which each
engine counts in its own pass: ``batched.py`` in process, ``per_query_spark.py`` on
Spark). ``table`` joins them into the columns of ``COLUMNS``. Nothing here reads rows or
imports PySpark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from disc21spark.matching import kernel
from disc21spark.matching.model import GroundTruth

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

# queries.csv's columns, in order (docs/matching.md, "Per-query results")
COLUMNS = (
    "query_id",
    "has_match",
    "true_pairs",
    "predictions",
    "found",
    "rank",
    "true_score",
    "wrong_reference",
    "wrong_score",
    "contribution",
)
GROUP = "group"  # the column added with --query-groups, after query_id


@dataclass(frozen=True)
class TrueRanks:
    """A submission's predicted true pairs as its scoring counted them: ``query`` int64
    (index in the ground truth), ``score`` float64, ``rank`` int64 (0 = first, pessimistic
    ties), sorted by (query, score); ``misses_ge`` int64 (T,): the non-matching pairs
    scoring at least each distinct true score, ascending."""

    query: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    misses_ge: np.ndarray


@dataclass
class QueryRows:
    """Per query of the ground truth (its index): ``predictions`` int64, and its
    best-scoring wrong reference, ``wrong_score`` float64 (-inf: none) and
    ``wrong_reference`` (object: str or None), the smallest id among equal scores."""

    predictions: np.ndarray
    wrong_score: np.ndarray
    wrong_reference: np.ndarray

    @classmethod
    def empty(cls, queries: int) -> QueryRows:
        return cls(
            np.zeros(queries, np.int64),
            np.full(queries, -np.inf),
            np.full(queries, None, dtype=object),
        )

    def add_batch(
        self, query: np.ndarray, label: np.ndarray, score: np.ndarray, reference: pa.Array
    ) -> None:
        """Count one batch's rows: ``query`` int64 (-1: not in the ground truth),
        ``label`` bool, ``score`` float64, ``reference`` the rows' reference ids."""
        known = query >= 0
        self.predictions += np.bincount(query[known], minlength=len(self.predictions))
        wrong = np.flatnonzero(known & ~label)
        if not wrong.size:
            return
        q, s = query[wrong], score[wrong] + 0.0  # -0.0 ties with 0.0
        best = np.full(len(self.predictions), -np.inf)
        np.maximum.at(best, q, s)
        top = s == best[q]  # each query's rows at its best wrong score: few
        refs = reference.take(wrong[top]).to_pylist()
        self.offer(q[top], s[top], [str(r) for r in refs])

    def offer(self, query: np.ndarray, score: np.ndarray, refs: list[str]) -> None:
        """Keep, per query, the highest score offered (the smallest id among equals)."""
        for q, s, r in zip(query.tolist(), score.tolist(), refs):
            held = self.wrong_score[q]
            if s > held or (s == held and r < self.wrong_reference[q]):
                self.wrong_score[q], self.wrong_reference[q] = s, r


def table(
    gt: GroundTruth, truth: TrueRanks, rows: QueryRows, groups: object = None
) -> pd.DataFrame:
    """queries.csv as a pandas DataFrame (``COLUMNS``; ``group`` after ``query_id`` when
    ``groups``, a ``stats.groups_file.QueryGroups``, is given), one row per query of
    ``gt`` in its order. ``rank`` is 1-based (as recall at rank k counts it) and, with
    ``true_score``, that of the query's best-ranked true pair (empty: none predicted);
    ``wrong_*`` the best-scoring wrong reference ranked above it (any, when none is
    predicted); ``contribution`` the query's share of μAP (the column sums to μAP)."""
    import pandas as pd

    n = gt.n_queries
    best = _best_true(truth, n)
    has_best = best >= 0
    at = np.maximum(best, 0)
    true_score = np.where(has_best, truth.score[at] if len(truth.score) else 0.0, np.nan)
    above = rows.wrong_score >= np.where(has_best, true_score, -np.inf)
    above &= np.isfinite(rows.wrong_score)
    true_pairs = _true_pairs(gt)
    frame = {
        "query_id": gt.query_ids.astype(str),
        "has_match": true_pairs > 0,
        "true_pairs": true_pairs,
        "predictions": rows.predictions,
        "found": np.bincount(truth.query, minlength=n).astype(np.int64),
        "rank": pd.array(np.where(has_best, truth.rank[at] + 1 if len(truth.rank) else 0, 0)),
        "true_score": true_score,
        "wrong_reference": np.where(above, rows.wrong_reference, None),
        "wrong_score": np.where(above, rows.wrong_score, np.nan),
        "contribution": _contributions(truth, gt.n_positives, n),
    }
    out = pd.DataFrame(frame)
    out["rank"] = out["rank"].astype("Int64").mask(~has_best)
    if groups is not None:
        out.insert(1, GROUP, _group_names(groups, n))
    return out


def _best_true(truth: TrueRanks, queries: int) -> np.ndarray:
    """int64 (queries,): the index in ``truth`` of each query's best-ranked true pair (its
    highest score, the last of its query in (query, score) order); -1: none."""
    best = np.full(queries, -1, dtype=np.int64)
    best[truth.query] = np.arange(len(truth.query))  # the last write of a query wins
    return best


def _true_pairs(gt: GroundTruth) -> np.ndarray:
    """int64 (queries,): the ground truth's pairs of each query."""
    index = {q: i for i, q in enumerate(gt.query_ids.astype(str))}
    at = np.array([index[q] for q in gt.positive_queries.astype(str)], dtype=np.int64)
    return np.bincount(at, minlength=gt.n_queries).astype(np.int64)


def _contributions(truth: TrueRanks, positives: int, queries: int) -> np.ndarray:
    """float64 (queries,): each query's true pairs' shares of μAP (``kernel.level_shares``)."""
    if not len(truth.score):
        return np.zeros(queries)
    ascending = np.unique(truth.score + 0.0)
    level = len(ascending) - 1 - np.searchsorted(ascending, truth.score + 0.0)
    hits = np.bincount(level, minlength=len(ascending))
    k_end = np.cumsum(hits)
    n_end = truth.misses_ge[::-1] + k_end
    shares = kernel.level_shares(hits, k_end, n_end, positives)
    return np.bincount(truth.query, weights=shares[level], minlength=queries)


def _group_names(groups: object, queries: int) -> list:
    """Each query's group name (None: in no group)."""
    names = list(groups.names)
    return [names[c] if 0 <= c < len(names) else None for c in groups.codes[:queries].tolist()]
