"""The single-machine search against the brute-force specification (no Spark)."""

from __future__ import annotations

import faiss
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disc21spark.descriptors import spec as S


def make_searcher(
    xb: np.ndarray, metric: str, ids: np.ndarray, factory: str = "Flat", train=None, array=False
):
    """A FAISS index through serialisation, or (array=True) the broadcast-array path."""
    if array:
        return S.flat_searcher(xb, metric, S.reference_order(ids), S.largest_norm(xb))
    empty = S.build_index(factory, metric, xb if train is None else train)
    return S.searcher(S.serialize(S.filled(empty, xb)), metric, S.reference_order(ids))


def spec_knn(full: np.ndarray, ranks: np.ndarray, k: int) -> np.ndarray:
    """Per query the k best references: score desc, then reference id."""
    nq, nb = full.shape
    return np.lexsort((np.broadcast_to(ranks, (nq, nb)), -full), axis=1)[:, :k]


def spec_max_results(full: np.ndarray, qids: np.ndarray, ranks: np.ndarray, n: int) -> set:
    qi, ri = np.meshgrid(np.arange(full.shape[0]), np.arange(full.shape[1]), indexing="ij")
    keep = S.cut_ties(full.ravel(), qids[qi.ravel()], ranks[ri.ravel()], n)
    return set(zip(qi.ravel()[keep].tolist(), ri.ravel()[keep].tolist()))


def data(seed: int, nq: int, nb: int, d: int, duplicates: bool, coarse: bool):
    rng = np.random.default_rng(seed)
    xb = rng.standard_normal((nb, d)).astype(np.float32)
    xq = rng.standard_normal((nq, d)).astype(np.float32)
    if coarse:  # small integers: many exactly equal scores
        xb, xq = np.round(xb), np.round(xq)
    if duplicates and nb > 4:
        xb[1:4] = xb[0]
        xq[: min(3, nq)] = xb[0]
    ids = np.array([f"R{i:05d}" for i in rng.permutation(nb)], dtype=object)
    qids = np.array([f"Q{i:05d}" for i in rng.permutation(nq)], dtype=object)
    return xq, xb, qids, ids


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    nq=st.integers(1, 60),
    nb=st.integers(1, 300),
    d=st.sampled_from([1, 3, 16]),
    k=st.integers(1, 40),
    metric=st.sampled_from(["l2", "ip"]),
    duplicates=st.booleans(),
    coarse=st.booleans(),
    array=st.booleans(),
)
def test_knn_equals_brute_force(seed, nq, nb, d, k, metric, duplicates, coarse, array):
    xq, xb, _, ids = data(seed, nq, nb, d, duplicates, coarse)
    s = make_searcher(xb, metric, ids, array=array)
    full = S.brute_force_pairs(xq, xb, metric)
    p = S.knn(s, xq, k)
    kk = min(k, nb)
    want = spec_knn(full, s.reference_order, kk)
    assert np.array_equal(p.query, np.repeat(np.arange(nq), kk))
    assert np.array_equal(p.reference.reshape(nq, kk), want)
    assert np.array_equal(p.score.reshape(nq, kk), np.take_along_axis(full, want, 1))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    nq=st.integers(1, 80),
    nb=st.integers(1, 200),
    n=st.integers(1, 3000),
    cuts=st.lists(st.integers(0, 80), max_size=4),
    metric=st.sampled_from(["l2", "ip"]),
    coarse=st.booleans(),
    normalise=st.booleans(),
    array=st.booleans(),
)
def test_bounded_blocks_then_global_cut_equal_brute_force(
    seed, nq, nb, n, cuts, metric, coarse, normalise, array
):
    xq, xb, qids, ids = data(seed, nq, nb, 8, True, coarse)
    s = make_searcher(xb, metric, ids, array=array)
    shift = np.random.default_rng(seed).normal(size=nq).round(1) if normalise else None
    full = S.brute_force_pairs(xq, xb, metric, shift)
    bounds = sorted({0, nq, *[c for c in cuts if c < nq]})
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        p = S.bounded(s, xq[a:b], n, None if shift is None else shift[a:b])
        assert len(p) >= min(n, (b - a) * nb)  # every block keeps its best n (and ties)
        p.query = p.query + a
        parts.append(p)
    allp = S.concat(parts)
    keep = S.cut_ties(allp.score, qids[allp.query], s.reference_order[allp.reference], n)
    got = set(zip(allp.query[keep].tolist(), allp.reference[keep].tolist()))
    assert got == spec_max_results(full, qids, s.reference_order, n)
    assert np.array_equal(allp.score, full[allp.query, allp.reference])


def test_pair_scores_do_not_depend_on_batching():
    xq, xb, _, _ = data(3, 50, 400, 64, False, False)
    qi = np.repeat(np.arange(50), 400)
    ri = np.tile(np.arange(400), 50)
    whole = S.pair_scores(xq, xb, qi, ri, "l2")
    pieces = np.concatenate(
        [S.pair_scores(xq, xb, qi[a : a + 77], ri[a : a + 77], "l2") for a in range(0, len(qi), 77)]
    )
    assert np.array_equal(whole, pieces)
    exact = -((xq[qi].astype(np.float64) - xb[ri]) ** 2).sum(1)
    assert np.array_equal(whole, exact.astype(np.float32))


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_same_neighbours_as_faiss_knn_on_data_without_ties(metric):
    xq, xb, _, _ = data(5, 300, 5000, 32, False, False)
    ids = np.array([f"R{i:05d}" for i in range(5000)], dtype=object)  # id order = row order
    s = make_searcher(xb, metric, ids)
    p = S.knn(s, xq, 10)
    dist, idx = faiss.knn(xq, xb, 10, S.METRICS[metric])
    assert np.array_equal(p.reference.reshape(300, 10), idx)
    faiss_scores = -dist if metric == "l2" else dist
    assert np.allclose(p.score.reshape(300, 10), faiss_scores, rtol=1e-5, atol=1e-4)


def test_score_normalisation_offsets_equal_numpy():
    xq, xb, _, _ = data(7, 40, 300, 16, False, False)
    background = np.random.default_rng(8).standard_normal((500, 16)).astype(np.float32)
    bg = make_searcher(background, "ip", np.array([f"B{i:04d}" for i in range(500)], dtype=object))
    got = S.offsets(bg, xq, 3, 7, 0.5)
    sims = np.sort(xq.astype(np.float64) @ background.T.astype(np.float64), axis=1)[:, ::-1]
    assert np.allclose(got, 0.5 * sims[:, 2:7].mean(1), rtol=1e-6)


def test_codec_pca_whitening_and_l2norm_equal_numpy():
    rng = np.random.default_rng(9)
    train = rng.standard_normal((2000, 24)).astype(np.float32) * np.linspace(0.2, 3, 24).astype(
        np.float32
    )
    xb = train[:400]
    xq = xb[:30] + 0.05 * rng.standard_normal((30, 24)).astype(np.float32)
    ids = np.array([f"R{i:04d}" for i in range(400)], dtype=object)
    s = make_searcher(xb, "ip", ids, "PCAW8,L2norm,Flat", train=train)
    assert s.exact and s.vectors.shape == (400, 8)
    # the same transform by hand: PCA matrix and mean from FAISS, then unit norm
    pca = faiss.downcast_VectorTransform(s.transforms[0])
    A = faiss.vector_to_array(pca.A).reshape(pca.d_out, pca.d_in)
    b = faiss.vector_to_array(pca.b)

    def by_hand(x):
        y = x.astype(np.float64) @ A.T.astype(np.float64) + b
        return (y / np.linalg.norm(y, axis=1, keepdims=True)).astype(np.float32)

    assert np.allclose(s.transform(xq), by_hand(xq), atol=1e-5)
    p = S.knn(s, xq, 1)
    assert np.array_equal(p.reference, np.arange(30))  # each query finds its original
    full = by_hand(xq).astype(np.float64) @ by_hand(xb).T.astype(np.float64)
    assert np.allclose(p.score, full.max(1), atol=1e-5)


def test_approximate_index_keeps_its_own_scores():
    xq, xb, _, ids = data(11, 20, 2000, 16, False, False)
    s = make_searcher(xb, "l2", ids, "IVF8,Flat")
    assert not s.exact
    p = S.knn(s, xq, 5)
    assert len(p) == 20 * 5 and np.all(np.diff(p.score.reshape(20, 5), axis=1) <= 0)
