"""Per-query results by brute force: the tests' oracle for ``per_query.py``.

All rows sorted once in the official scorer's pessimistic order (``spec.py``); the
precision at each true pair read off its position; a query's rows walked one by one.
No production module imports it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from disc21spark.matching.model import GroundTruth
from disc21spark.matching.oracle.spec import label_pairs, pessimistic_order


def per_query(
    gt: GroundTruth, query_ids: np.ndarray, reference_ids: np.ndarray, scores: np.ndarray
) -> list[dict]:
    """One dict per query of ``gt`` (in its order) with ``per_query.COLUMNS``' values
    (None where the table holds a missing value), from the rows' ids (str arrays (n,))
    and float64 scores (n,)."""
    scores = np.asarray(scores, dtype=np.float64) + 0.0
    label = label_pairs(query_ids, reference_ids, gt)
    order = pessimistic_order(scores, label)
    tp = np.cumsum(label[order])
    position = np.arange(1, len(order) + 1)
    p = gt.n_positives
    terms = np.zeros(len(scores))
    terms[order] = np.where(label[order], (tp / p - (tp - 1) / p) * (tp / position), 0.0)
    # the true pairs of one score share its terms equally (no query owns an order among them)
    for s in np.unique(scores[label]):
        tied = label & (scores == s)
        terms[tied] = terms[tied].mean()
    truths = [str(q) for q in gt.positive_queries]
    rows = _Rows(query_ids, reference_ids, scores, label, terms)
    return [_row(str(q), truths.count(str(q)), rows) for q in gt.query_ids]


class _Rows(NamedTuple):
    """Every row, (n,) each: its ids, score, whether it is a true pair, its μAP term."""

    query_ids: np.ndarray
    reference_ids: np.ndarray
    scores: np.ndarray
    label: np.ndarray
    terms: np.ndarray


def _row(q: str, true_pairs: int, rows: _Rows) -> dict:
    query_ids, reference_ids, scores, label, terms = rows
    mine = np.flatnonzero(np.asarray(query_ids).astype(str) == q)
    found = mine[label[mine]]
    row = {
        "query_id": q,
        "has_match": true_pairs > 0,
        "true_pairs": true_pairs,
        "predictions": len(mine),
        "found": len(found),
        "rank": None,
        "true_score": None,
        "wrong_reference": None,
        "wrong_score": None,
        "contribution": float(terms[found].sum()),
    }
    floor = -np.inf
    if len(found):
        best = float(scores[found].max())
        row["rank"] = int((scores[mine] >= best).sum())
        row["true_score"] = floor = best
    wrong = [i for i in mine if not label[i] and scores[i] >= floor]
    if wrong:
        top = max(scores[i] for i in wrong)
        row["wrong_score"] = float(top)
        row["wrong_reference"] = min(str(reference_ids[i]) for i in wrong if scores[i] == top)
    return row
