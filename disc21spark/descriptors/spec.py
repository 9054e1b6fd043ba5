"""Single-machine search: the index, exact scores, kNN and bounded (max-results) search.

Everything here works on numpy arrays in one process; the Spark plan (plan.py)
runs these same functions on each query partition. ``brute_force_pairs`` is the
specification: every score of every pair, computed one pair at a time.

Why scores are recomputed: FAISS computes a batch of L2 distances as
|q|² + |r|² - 2 q·r with BLAS, and the rounding depends on which queries share the
batch, so the same pair can score differently in two partitionings (we measured
differences of 4e-5 on 64-d data). FAISS therefore only proposes candidates, with a
safety margin wider than its rounding error; the scores we rank and report are computed
pair by pair in float64 and rounded once to float32, so they do not depend on the
partitioning, the batch or the number of threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import faiss
import numpy as np

METRICS = {"l2": faiss.METRIC_L2, "ip": faiss.METRIC_INNER_PRODUCT}
PAIR_CHUNK = 8192  # pairs scored at a time: 8192 × 256 float64 = 16 MB
# FAISS float32 rounding error bound, relative to |q|²+|r|² (l2) or |q||r| (ip), per
# dimension: sums of d products lose at most d·eps each; 4× for the norms and the
# subtraction.
_EPS32 = float(np.finfo(np.float32).eps)


@dataclass
class Searcher:
    """An index ready to search, with what exact rescoring needs."""

    index: faiss.Index  # searched with transformed queries (pre-transforms removed)
    metric: str
    reference_order: np.ndarray  # position of each reference's id in sorted id order
    vectors: np.ndarray | None  # the indexed (transformed) vectors; None: approximate index
    transforms: list  # pre-transforms applied to queries before the flat index
    max_norm: float  # largest |r| among the indexed vectors
    owner: faiss.Index | None = None  # the deserialized index: owns `index` and `vectors`
    ids: np.ndarray | None = None  # reference ids by row, when the caller wants them

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    @property
    def exact(self) -> bool:
        return self.vectors is not None

    def transform(self, xq: np.ndarray) -> np.ndarray:
        for vt in self.transforms:
            xq = vt.apply(np.ascontiguousarray(xq, dtype=np.float32))
        return np.ascontiguousarray(xq, dtype=np.float32)


def build_index(
    factory: str,
    metric: str,
    train: np.ndarray | None = None,
    nprobe: int | None = None,
) -> faiss.Index:
    """An empty (trained) FAISS index from a factory string such as ``Flat``,
    ``IVF4096,Flat`` or ``PCAW256,L2norm,Flat``."""
    if train is None:
        raise ValueError("build_index needs vectors to learn the dimension from")
    d = train.shape[1]
    index = faiss.index_factory(d, factory, METRICS[metric])
    if not index.is_trained:
        index.train(np.ascontiguousarray(train, dtype=np.float32))
    if nprobe is not None:
        faiss.ParameterSpace().set_index_parameter(index, "nprobe", nprobe)
    return index


def filled(empty: faiss.Index, vectors: np.ndarray) -> faiss.Index:
    """A copy of a trained, empty index holding ``vectors``."""
    # a serialization round trip copies any index (clone_index refuses some transforms)
    index = faiss.deserialize_index(faiss.serialize_index(empty))
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def serialize(index: faiss.Index) -> bytes:
    return faiss.serialize_index(index).tobytes()


def is_flat(index: faiss.Index) -> bool:
    """A plain exact index: its vectors can travel as an array instead of FAISS bytes."""
    return type(faiss.downcast_index(index)) in (
        faiss.IndexFlat,
        faiss.IndexFlatL2,
        faiss.IndexFlatIP,
    )


def largest_norm(vectors: np.ndarray) -> float:
    """An upper bound of the largest |r|: float32 sums, widened by far more than their
    rounding error (it only sizes a safety margin)."""
    if len(vectors) == 0:
        return 0.0
    squares = np.einsum("ij,ij->i", vectors, vectors, dtype=np.float32)
    return float(np.sqrt(float(squares.max()) * (1 + 1e-4)))


class ArrayIndex:
    """Exact search straight over a float32 array, the subset of FAISS's index interface
    we use. A worker searches the broadcast array itself: no copy into an IndexFlat
    (200 MB of page faults per worker for 200,000 × 256 references)."""

    def __init__(self, vectors: np.ndarray, metric: str) -> None:
        self.xb = np.ascontiguousarray(vectors, dtype=np.float32)
        self.metric = METRICS[metric]
        self.ntotal, self.d = self.xb.shape

    def search(self, xq: np.ndarray, k: int):
        return faiss.knn(np.ascontiguousarray(xq, dtype=np.float32), self.xb, k, self.metric)

    def range_search(self, xq: np.ndarray, radius: float):
        xq = np.ascontiguousarray(xq, dtype=np.float32)
        nq = len(xq)
        res = faiss.RangeSearchResult(nq)
        run = (
            faiss.range_search_L2sqr
            if self.metric == faiss.METRIC_L2
            else faiss.range_search_inner_product
        )
        run(faiss.swig_ptr(xq), faiss.swig_ptr(self.xb), self.d, nq, self.ntotal, radius, res)
        lims = faiss.rev_swig_ptr(res.lims, nq + 1).copy()
        n = int(lims[-1])
        dist = faiss.rev_swig_ptr(res.distances, n).copy()
        ids = faiss.rev_swig_ptr(res.labels, n).copy()
        return lims, dist, ids


def flat_searcher(
    vectors: np.ndarray, metric: str, reference_order: np.ndarray, max_norm: float
) -> Searcher:
    """Exact search over ``vectors`` as they are. ``max_norm``: largest_norm(vectors),
    computed once by the sender rather than in every worker."""
    index = ArrayIndex(vectors, metric)
    return Searcher(index, metric, reference_order, index.xb, [], max_norm)


def searcher(blob: bytes, metric: str, reference_order: np.ndarray) -> Searcher:
    """Rebuild a serialized index; find the flat storage behind any pre-transforms."""
    index = faiss.deserialize_index(np.frombuffer(blob, dtype=np.uint8))
    transforms = []
    inner = index
    if isinstance(inner, faiss.IndexPreTransform):
        transforms = [inner.chain.at(i) for i in range(inner.chain.size())]
        inner = faiss.downcast_index(inner.index)
    vectors = None
    if isinstance(inner, faiss.IndexFlat) and inner.ntotal > 0:
        vectors = faiss.rev_swig_ptr(inner.get_xb(), inner.ntotal * inner.d)
        vectors = vectors.reshape(inner.ntotal, inner.d)
    elif isinstance(inner, faiss.IndexFlat):
        vectors = np.zeros((0, inner.d), dtype=np.float32)
    max_norm = largest_norm(vectors) if vectors is not None else 0.0
    # queries are transformed here once, so the search goes to the inner index
    return Searcher(inner, metric, reference_order, vectors, transforms, max_norm, owner=index)


def pair_scores(xq: np.ndarray, xb: np.ndarray, qi: np.ndarray, ri: np.ndarray, metric: str):
    """Score of each pair (xq[qi], xb[ri]): -|q-r|² (l2) or q·r (ip), summed in float64
    and rounded once to float32, pair by pair: independent of how pairs are batched."""
    out = np.empty(len(qi), dtype=np.float32)
    for a in range(0, len(qi), PAIR_CHUNK):
        q = xq[qi[a : a + PAIR_CHUNK]].astype(np.float64)
        r = xb[ri[a : a + PAIR_CHUNK]].astype(np.float64)
        if metric == "l2":
            diff = q - r
            out[a : a + PAIR_CHUNK] = -np.einsum("ij,ij->i", diff, diff)
        else:
            out[a : a + PAIR_CHUNK] = np.einsum("ij,ij->i", q, r)
    return out


def rounding_slack(s: Searcher, xq: np.ndarray) -> np.ndarray:
    """Per query: how far FAISS's float32 score can be from the exact one."""
    if not s.exact:
        return np.zeros(len(xq))
    qn = np.sqrt((xq.astype(np.float64) ** 2).sum(1))
    d = xq.shape[1]
    scale = qn**2 + s.max_norm**2 if s.metric == "l2" else qn * s.max_norm
    return 4 * d * _EPS32 * scale + 1e-30


def _faiss_scores(s: Searcher, distances: np.ndarray) -> np.ndarray:
    """FAISS distances as scores (higher is better), float64."""
    d = distances.astype(np.float64)
    return -d if s.metric == "l2" else d


@dataclass
class Found:
    """Search results: query row, reference row, score (already normalised if asked)."""

    query: np.ndarray  # int64, row in the query block
    reference: np.ndarray  # int64, row in the reference set (the shard's offset added later)
    score: np.ndarray  # float64

    @staticmethod
    def empty() -> Found:
        return Found(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))

    def take(self, keep) -> Found:
        return Found(self.query[keep], self.reference[keep], self.score[keep])

    def __len__(self) -> int:
        return len(self.query)


def concat(parts: list[Found]) -> Found:
    if not parts:
        return Found.empty()
    return Found(
        *(np.concatenate([getattr(p, f) for p in parts]) for f in ("query", "reference", "score"))
    )


def _rescore(s: Searcher, xq: np.ndarray, qi, ri, approx) -> np.ndarray:
    if s.exact:
        return pair_scores(xq, s.vectors, qi, ri, s.metric).astype(np.float64)
    return approx


def _range(s: Searcher, xq: np.ndarray, bound: np.ndarray) -> Found:
    """All pairs whose FAISS score is ≥ bound (one bound per query), FAISS scores."""
    if len(xq) == 0:
        return Found.empty()
    # FAISS keeps d < radius (l2) or d > radius (ip): one radius, the loosest, then filter
    if s.metric == "l2":
        radius = float(np.nextafter(np.float32(-bound.min()), np.float32(np.inf)))
    else:
        radius = float(np.nextafter(np.float32(bound.min()), np.float32(-np.inf)))
    lims, dist, ids = s.index.range_search(xq, radius)
    qi = np.repeat(np.arange(len(xq), dtype=np.int64), np.diff(lims.astype(np.int64)))
    approx = _faiss_scores(s, dist)
    keep = approx >= bound[qi]
    return Found(qi[keep], ids[keep].astype(np.int64), approx[keep])


def knn(s: Searcher, xq_raw: np.ndarray, k: int) -> Found:
    """The k best references of every query, exactly (scores rescored pair by pair,
    ties broken by reference id), rows ordered by query then rank."""
    xq = s.transform(xq_raw)
    nq, nb = len(xq), s.ntotal
    k = min(k, nb)
    if nq == 0 or k == 0:
        return Found.empty()
    # FAISS proposes more than k: its k-th may be off by its rounding error
    k2 = min(nb, k + max(8, k)) if s.exact else k
    dist, ids = s.index.search(xq, k2)
    approx = _faiss_scores(s, dist)
    qi = np.repeat(np.arange(nq, dtype=np.int64), k2).reshape(nq, k2)
    keep = ids >= 0
    slack = rounding_slack(s, xq)
    if s.exact:
        # only candidates within 2 slacks of FAISS's k-th can be among the exact k best:
        # the k it ranks first all score at least its k-th minus one slack
        keep &= approx >= (approx[:, k - 1] - 2 * slack)[:, None]
    cand = Found(qi[keep], ids[keep].astype(np.int64), approx[keep])
    cand.score = _rescore(s, xq, cand.query, cand.reference, cand.score)
    best = _top_per_query(s, cand, k, nq)
    if s.exact and k2 < nb:
        # a reference FAISS did not return scores at most its last score + slack; when
        # that could beat or tie our k-th, fetch everything down to that level
        kth = np.full(nq, -np.inf)
        is_last = np.r_[best.query[1:] != best.query[:-1], True]
        kth[best.query[is_last]] = best.score[is_last]
        unsure = np.nonzero(kth <= approx[:, -1] + slack)[0]
        if len(unsure):
            more = _range(s, xq[unsure], kth[unsure] - 2 * slack[unsure])
            more = Found(unsure[more.query], more.reference, more.score)
            more.score = _rescore(s, xq, more.query, more.reference, more.score)
            keep = ~np.isin(best.query, unsure)
            best = _top_per_query(s, concat([best.take(keep), more]), k, nq)
    return best


def _top_per_query(s: Searcher, p: Found, k: int, nq: int) -> Found:
    """Per query the k best pairs by (score desc, reference id asc)."""
    order = np.lexsort((s.reference_order[p.reference], -p.score, p.query))
    p = p.take(order)
    starts = np.searchsorted(p.query, np.arange(nq))
    rank = np.arange(len(p)) - starts[p.query] if len(p) else np.zeros(0, np.int64)
    return p.take(rank < k)


def offsets(
    background: Searcher, xq_raw: np.ndarray, first: int, last: int, weight: float
) -> np.ndarray:
    """Score normalisation: weight × the mean score of each query's first..last
    neighbours (1-based, inclusive) in the background set."""
    nb = knn(background, xq_raw, last)
    out = np.zeros(len(xq_raw))
    if len(nb) == 0:
        return out
    starts = np.searchsorted(nb.query, np.arange(len(xq_raw)))
    rank = np.arange(len(nb)) - starts[nb.query]
    sel = (rank >= first - 1) & (rank <= last - 1)
    sums = np.bincount(nb.query[sel], weights=nb.score[sel], minlength=len(xq_raw))
    counts = np.bincount(nb.query[sel], minlength=len(xq_raw))
    return weight * sums / np.maximum(counts, 1)


def normalised_knn(s: Searcher, xq_raw: np.ndarray, k: int, shift: np.ndarray | None) -> Found:
    p = knn(s, xq_raw, k)
    if shift is not None:
        p.score = p.score - shift[p.query]
    return p


def bounded(
    s: Searcher, xq_raw: np.ndarray, n_results: int, shift: np.ndarray | None = None
) -> Found:
    """This block's best ``n_results`` pairs over all its queries together (plus every pair
    tied with the last one): the block's share of a global max-results search.

    Like FAISS's contrib/exhaustive_search, a threshold bounds the results; here it comes
    from one kNN pass (k chosen so the block has ≥ 2·n_results candidates), and only the
    queries whose k-th neighbour still passes it are searched again by range."""
    xq = s.transform(xq_raw)
    nq, nb = len(xq), s.ntotal
    if nq == 0 or nb == 0 or n_results <= 0:
        return Found.empty()
    shift = np.zeros(nq) if shift is None else shift
    k1 = min(nb, max(16, math.ceil(2 * n_results / nq)))
    dist, ids = s.index.search(xq, k1)
    approx = _faiss_scores(s, dist) - shift[:, None]
    valid = ids >= 0
    # one slack for the block: the cut compares pairs of different queries
    slack = float(rounding_slack(s, xq).max())
    flat = approx[valid]
    if k1 == nb or len(flat) <= n_results:
        # every pair of the block is a candidate
        t_approx = -np.inf
    else:
        t_approx = float(np.partition(flat, len(flat) - n_results)[len(flat) - n_results])
    low = t_approx - 2 * slack  # below this level no pair can make the block's cut
    qi = np.repeat(np.arange(nq, dtype=np.int64), k1).reshape(nq, k1)
    take = valid & (approx >= low)
    cand = Found(qi[take], ids[take].astype(np.int64), approx[take])
    if k1 < nb:
        unsure = np.nonzero(valid[:, -1] & (approx[:, -1] >= low))[0]
        if len(unsure):
            more = _range(s, xq[unsure], low + shift[unsure])
            more = Found(unsure[more.query], more.reference, more.score - shift[unsure][more.query])
            cand = concat([cand.take(~np.isin(cand.query, unsure)), more])
    cand.score = _rescore(s, xq, cand.query, cand.reference, cand.score + shift[cand.query])
    cand.score = cand.score - shift[cand.query]
    return keep_best(cand, n_results)


def keep_best(p: Found, n_results: int) -> Found:
    """The pairs scoring at least the n-th best score (ties at the cut all kept)."""
    if len(p) <= n_results:
        return p
    cut = np.partition(p.score, len(p) - n_results)[len(p) - n_results]
    return p.take(p.score >= cut)


def cut_ties(
    scores: np.ndarray, query_ids: np.ndarray, reference_order: np.ndarray, n_results: int
) -> np.ndarray:
    """Indices of exactly the n best pairs: score desc, then query id, then reference id
    (the official scorer picks among pairs tied at the cut arbitrarily; we do not)."""
    if len(scores) <= n_results:
        return np.arange(len(scores))
    order = np.lexsort((reference_order, query_ids, -scores))
    return np.sort(order[:n_results])


def brute_force_pairs(
    xq: np.ndarray, xb: np.ndarray, metric: str, shift: np.ndarray | None = None
) -> np.ndarray:
    """The specification: the score of every (query, reference) pair, one pair at a time."""
    qi, ri = np.meshgrid(np.arange(len(xq)), np.arange(len(xb)), indexing="ij")
    scores = pair_scores(xq, xb, qi.ravel(), ri.ravel(), metric).astype(np.float64)
    scores = scores.reshape(len(xq), len(xb))
    return scores if shift is None else scores - shift[:, None]


def reference_order(ids: np.ndarray) -> np.ndarray:
    """Each reference's position in id order: ties are broken by id, not by file order."""
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.argsort(ids, kind="stable")] = np.arange(len(ids))
    return rank
