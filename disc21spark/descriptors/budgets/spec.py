"""The budget cuts in numpy: the specification the Spark plan (plan.py) is held to.

One search at the largest budget gives pairs; each smaller budget keeps a subset of
them, exactly the subset a search with that budget would give:

* global search (``max_results``): the N best pairs over all queries, by score
  descending, then query id, then reference id ascending, the rule of the search's own
  --max-results cut (``descriptors.spec.cut_ties``). The N best of the M best pairs are
  the N best of all pairs, so the cut equals a search with --max-results N.
* kNN (``knn``): per query its k best references, by score descending then reference id
  ascending, the rule of the kNN search (``descriptors.spec.knn``): the k best of a
  query's K best are its k best.

Exactly N pairs (k per query) are kept, never more: pairs tied at the cut are taken in
id order. Each cut is then scored by the matching track's specification.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from disc21spark.descriptors.spec import cut_ties
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.oracle import spec as matching_spec

KINDS = ("max_results", "knn")


@dataclass(frozen=True)
class Budgets:
    """The budgets one search is cut to.

    ``kind``: "max_results" (N pairs over all queries) or "knn" (k per query);
    ``values``: the budgets of the table, increasing; ``main``: the job's own
    --max-results or --knn, whose metrics are the run's figures."""

    kind: str
    values: tuple[int, ...]
    main: int

    @property
    def search(self) -> int:
        """The budget searched once: the main one, or the largest of the table if larger."""
        return max((self.main, *self.values))

    @property
    def cuts(self) -> tuple[int, ...]:
        """Every budget scored, increasing: the table's and the main one."""
        return tuple(sorted({*self.values, self.main}))


def ranks_in_query(
    query_ids: np.ndarray, reference_order: np.ndarray, scores: np.ndarray
) -> np.ndarray:
    """Per pair, its rank within its query (1 = best): score descending, then reference id
    (``reference_order``: the reference's position in id order). int64, input order."""
    order = np.lexsort((reference_order, -scores, query_ids))
    grouped = query_ids[order]
    first = np.r_[True, grouped[1:] != grouped[:-1]] if len(order) else np.zeros(0, bool)
    start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order)) - start + 1
    return ranks


def cut(
    kind: str,
    budget: int,
    query_ids: np.ndarray,
    reference_order: np.ndarray,
    scores: np.ndarray,
) -> np.ndarray:
    """Indices (increasing) of the pairs a search with ``budget`` keeps, from the pairs of
    a search with a larger budget; ValueError for an unknown kind."""
    if kind == "max_results":
        return cut_ties(scores, query_ids, reference_order, budget)
    if kind == "knn":
        return np.flatnonzero(ranks_in_query(query_ids, reference_order, scores) <= budget)
    raise ValueError(f"unknown budget kind {kind!r}; expected one of {KINDS}")


def budget_metrics(
    kind: str,
    budgets: Sequence[int],
    query_ids: np.ndarray,
    reference_ids: np.ndarray,
    reference_order: np.ndarray,
    scores: np.ndarray,
    gt: GroundTruth,
    curve_points: int = matching_spec.DEFAULT_CURVE_POINTS,
) -> list[MatchingMetrics]:
    """The metrics of each budget's cut, in the order of ``budgets``. The arrays: one
    entry per searched pair (query ids and reference ids as str objects, the reference's
    position in id order, float64 scores)."""
    query_ids = np.asarray(query_ids, dtype=object)
    reference_ids = np.asarray(reference_ids, dtype=object)
    scores = np.asarray(scores, dtype=np.float64)
    out = []
    for budget in budgets:
        keep = cut(kind, budget, query_ids, np.asarray(reference_order), scores)
        out.append(
            matching_spec.evaluate(
                query_ids[keep], reference_ids[keep], scores[keep], gt, curve_points
            )
        )
    return out
