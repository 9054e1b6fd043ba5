"""The comparisons the cited methods were published with, scored exactly.

A score is higher for a closer pair, and every score of a pair is computed the same way
whatever else is scored with it, then rounded once to float32 (the descriptor track's
rule), so counts of "references scoring at least as well as the original" are exact:

- ``l2``: −|q − r|², and ``ip``: q·r — the descriptor track's own scores (FAISS proposes,
  pairs are rescored in float64; ``descriptors.spec.pair_scores``);
- ``l1``: −Σ|qᵢ − rᵢ|. For histograms that sum to 1 this is 2·(intersection − 1), where
  Swain & Ballard's intersection is Σ min(qᵢ, rᵢ): the same order, so ``l1`` *is*
  histogram intersection for ranking;
- ``d1``: −Σ |qᵢ − rᵢ| / (1 + qᵢ + rᵢ), the relative distance Huang et al. (CVPR 1997)
  compare correlograms with.

FAISS has no d1, and its L1 goes through a blocked float32 sum whose rounding depends on
the batch, so ``l1`` and ``d1`` are not searched with FAISS: each pair's terms are added
in float64 in dimension order, one dimension at a time over a whole block of pairs. The
sum of a pair then depends only on its two vectors, so a block of queries against every
reference (``block_scores``) equals the pair-by-pair specification (``pair_scores``) bit
for bit.
"""

from __future__ import annotations

import numpy as np

from disc21spark.descriptors import spec as descriptor_spec

METRICS: tuple[str, ...] = ("l2", "ip", "l1", "d1")
FAISS_METRICS: tuple[str, ...] = ("l2", "ip")  # searched by the descriptor track's plan
ABOUT = {
    "l2": "−squared L2 distance",
    "ip": "inner product",
    "l1": "−L1 distance (histogram intersection's order)",
    "d1": "−Huang's d1 (Σ|q−r|/(1+q+r))",
}
PAIR_CHUNK = 1 << 16  # pairs scored at a time by pair_scores: 64k float64 accumulators


def check(metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"unknown distance {metric!r} (known: {', '.join(METRICS)})")
    return metric


def _accumulate(a_cols, b_cols, metric: str, shape: tuple[int, ...]) -> np.ndarray:
    """Σ over dimensions, in dimension order, of the metric's term for each pair; a_cols and
    b_cols yield one float64 column of each side per dimension, broadcastable to shape."""
    total = np.zeros(shape, dtype=np.float64)
    for a, b in zip(a_cols, b_cols):
        term = np.abs(a - b)
        if metric == "d1":
            term /= (1.0 + a) + b
        total += term
    return total


def pair_scores(
    xq: np.ndarray, xb: np.ndarray, qi: np.ndarray, ri: np.ndarray, metric: str
) -> np.ndarray:
    """Score of each pair (xq[qi], xb[ri]), float32: the specification of every metric."""
    check(metric)
    if metric in FAISS_METRICS:
        return descriptor_spec.pair_scores(xq, xb, qi, ri, metric)
    qi, ri = np.asarray(qi, dtype=np.int64), np.asarray(ri, dtype=np.int64)
    out = np.empty(len(qi), dtype=np.float32)
    for a in range(0, len(qi), PAIR_CHUNK):
        q = xq[qi[a : a + PAIR_CHUNK]].astype(np.float64)
        r = xb[ri[a : a + PAIR_CHUNK]].astype(np.float64)
        cols = range(q.shape[1])
        total = _accumulate((q[:, j] for j in cols), (r[:, j] for j in cols), metric, (len(q),))
        out[a : a + PAIR_CHUNK] = -total
    return out


def block_scores(xq: np.ndarray, xb: np.ndarray, metric: str) -> np.ndarray:
    """(len(xq), len(xb)) float32 scores of every pair, for ``l1`` and ``d1``: the same
    additions in the same order as pair_scores, so equal to it bit for bit."""
    if metric not in ("l1", "d1"):
        raise ValueError(f"block_scores computes l1 and d1, not {metric!r}")
    q = np.asarray(xq, dtype=np.float64)
    b = np.asarray(xb, dtype=np.float64).T.copy()  # a dimension's column is then contiguous
    cols = range(q.shape[1])
    total = _accumulate(
        (q[:, j, None] for j in cols), (b[j][None, :] for j in cols), metric, (len(q), b.shape[1])
    )
    return (-total).astype(np.float32)


def brute_force_pairs(xq: np.ndarray, xb: np.ndarray, metric: str) -> np.ndarray:
    """The score of every (query, reference) pair, one pair at a time, float64 of float32."""
    qi, ri = np.meshgrid(np.arange(len(xq)), np.arange(len(xb)), indexing="ij")
    scores = pair_scores(xq, xb, qi.ravel(), ri.ravel(), metric).astype(np.float64)
    return scores.reshape(len(xq), len(xb))


def top_k(scores: np.ndarray, reference_order: np.ndarray, k: int) -> descriptor_spec.Found:
    """The k best references of each row of an exact score matrix: score descending, ties
    by reference id (the descriptor track's kNN rule), rows ordered by query then rank."""
    nq, nb = scores.shape
    k = min(k, nb)
    if nq == 0 or k == 0:
        return descriptor_spec.Found.empty()
    kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1]
    qi, ri = np.nonzero(scores >= kth[:, None])  # the k best and everything tied with the k-th
    sc = scores[qi, ri].astype(np.float64)
    order = np.lexsort((reference_order[ri], -sc, qi))
    qi, ri, sc = qi[order], ri[order], sc[order]
    starts = np.searchsorted(qi, np.arange(nq))
    keep = np.arange(len(qi)) - starts[qi] < k
    return descriptor_spec.Found(qi[keep].astype(np.int64), ri[keep].astype(np.int64), sc[keep])
