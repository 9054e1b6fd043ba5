"""Exact ranks of the originals: hand-computed cases, and the blocked search of the Spark
plan equal to the pair-by-pair specification (ties, duplicates, subsets, sizes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disc21spark.descriptors import spec as search
from disc21spark.ranks import plan as rank_plan
from disc21spark.ranks.spec import Layout, exact_ranks, fit_line, layout, queries_needed, summary


def searcher(xb: np.ndarray, metric: str) -> search.Searcher:
    ids = np.array([f"R{i:06d}" for i in range(len(xb))])
    return search.flat_searcher(xb, metric, search.reference_order(ids), search.largest_norm(xb))


def test_hand_computed_ranks_count_ties_against_the_method():
    xb = np.array([[0.0], [1.0], [2.0], [1.0], [3.0]], dtype=np.float32)
    xq = np.array([[1.0], [0.1], [2.9]], dtype=np.float32)
    original = np.array([1, 0, -1])
    lay = Layout(np.array([0, 1, 0, 1, 0]), np.arange(5), (2, 5))
    r = exact_ranks(xq, xb, original, "l2", lay)
    # query 0 is at distance 0 from references 1 and 3 (a tie): rank 2, not 1
    assert r.rank.tolist() == [2, 1, 0]
    # subset of reference 1 is {1, 3}: still tied; query 1's subset {0, 2, 4}: first
    assert r.rank_in_subset.tolist() == [2, 1, 0]
    # at size 2 (references 0 and 1) query 0 has no tie left
    assert r.rank_by_size.tolist() == [[1, 2], [1, 1], [0, 0]]


def test_inner_product_ranks():
    xb = np.array([[1, 0], [0, 1], [0.7, 0.7]], dtype=np.float32)
    xq = np.array([[1, 0.1]], dtype=np.float32)
    r = exact_ranks(xq, xb, np.array([2]), "ip", Layout(np.zeros(3, int), np.arange(3), ()))
    assert r.rank.tolist() == [2]  # 1.0 > 0.77 > 0.1


@settings(max_examples=60, deadline=None)
@given(
    nq=st.integers(1, 12),
    nb=st.integers(2, 40),
    dim=st.integers(1, 9),
    metric=st.sampled_from(["l2", "ip"]),
    duplicates=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    subsets=st.integers(1, 3),
)
def test_blocked_search_equals_the_specification(nq, nb, dim, metric, duplicates, seed, subsets):
    rng = np.random.default_rng(seed)
    # few distinct values make exact ties common
    xb = rng.integers(-3, 4, size=(nb, dim)).astype(np.float32)
    if duplicates:
        xb[nb // 2 :] = xb[: nb - nb // 2]
    original = rng.integers(-1, nb, size=nq)
    xq = xb[np.maximum(original, 0)] + rng.integers(-1, 2, size=(nq, dim)).astype(np.float32)
    n_orig = len(np.unique(original[original >= 0]))
    sizes = tuple(sorted({max(n_orig, 1), nb}))
    lay = layout(nb, original, min(subsets, nb), sizes if n_orig else (nb,), seed)
    expected = exact_ranks(xq, xb, original, metric, lay)
    got = rank_plan.block_ranks(searcher(xb, metric), xq, original, lay)
    assert np.array_equal(got.rank, expected.rank)
    assert np.array_equal(got.rank_in_subset, expected.rank_in_subset)
    assert np.array_equal(got.rank_by_size, expected.rank_by_size)
    assert (got.rank[original >= 0] >= 1).all() and (got.rank[original < 0] == 0).all()


def test_layout_is_seeded_and_puts_the_originals_first():
    original = np.array([5, 5, 9, -1, 2])
    a = layout(20, original, 3, (3, 10, 20), seed=4)
    b = layout(20, original, 3, (3, 10, 20), seed=4)
    assert np.array_equal(a.subset, b.subset) and np.array_equal(a.position, b.position)
    assert sorted(a.position[[2, 5, 9]]) == [0, 1, 2]
    assert np.bincount(a.subset).tolist() in ([7, 7, 6], [7, 6, 7], [6, 7, 7])
    assert not np.array_equal(a.position, layout(20, original, 3, (3,), seed=5).position)


def test_summaries():
    s = summary(np.array([1, 1, 2, 10, 50]))
    assert s == {"queries": 5, "mean_rank": 12.8, "median_rank": 2.0,
                 "recall_at_1": 0.4, "recall_at_10": 0.8}  # fmt: skip
    line = fit_line(np.array([500, 1000, 2000]), np.array([5.0, 10.0, 20.0]))
    assert line["slope"] == pytest.approx(0.01) and line["r2"] == pytest.approx(1.0)
    rows = queries_needed(np.arange(1, 101), seed=1, resamples=200)
    assert [r["queries"] for r in rows] == [10, 20, 50, 100]
    assert rows[-1]["median_rank"] == 50.5
    assert all(r["ci_low"] <= r["median_rank"] <= r["ci_high"] for r in rows)
    assert rows[-1]["ci_high"] - rows[-1]["ci_low"] < rows[0]["ci_high"] - rows[0]["ci_low"]
