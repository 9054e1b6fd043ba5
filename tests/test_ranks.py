"""Exact ranks of the originals: hand-computed cases, and the blocked search of the Spark
plan equal to the pair-by-pair specification (ties, duplicates, subsets, sizes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disc21spark.descriptors import spec as search
from disc21spark.matching.stats.compare import holm
from disc21spark.ranks import distances
from disc21spark.ranks import plan as rank_plan
from disc21spark.ranks.spec import (
    Layout,
    exact_ranks,
    fit_line,
    layout,
    paired_test,
    queries_needed,
    queries_needed_summary,
    summary,
    tied_rank,
)


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
    # nothing scores strictly better than either original
    assert r.better.tolist() == [0, 0, 0] and r.better_by_size.tolist() == [[0, 0], [0, 0], [0, 0]]
    # mid-rank: the tie group {1, 3} holds places 1 and 2, so the original is at 1.5
    assert tied_rank(r.rank, r.better, "mid").tolist() == [1.5, 1.0, 0.5]
    assert tied_rank(r.rank, r.better, "pessimistic").tolist() == [2, 1, 0]


def test_mid_rank_of_a_tie_group_behind_better_references():
    # scores 5, 9, 7, 7, 7 with the original being one of the three 7s: one reference is
    # strictly better, three tie for places 2, 3, 4 -> pessimistic 4, mid 3
    xb = np.array([[5.0], [9.0], [7.0], [7.0], [7.0]], dtype=np.float32)
    xq = np.array([[1.0]], dtype=np.float32)
    r = exact_ranks(xq, xb, np.array([3]), "ip", Layout(np.zeros(5, int), np.arange(5), ()))
    assert (r.rank.tolist(), r.better.tolist()) == ([4], [1])
    assert tied_rank(r.rank, r.better, "mid").tolist() == [3.0]
    with pytest.raises(ValueError, match="ties"):
        tied_rank(r.rank, r.better, "optimistic")


def test_l1_and_d1_by_hand():
    q = np.array([[0.5, 0.5, 0.0]], dtype=np.float32)
    b = np.array([[0.5, 0.25, 0.25], [0.0, 0.5, 0.5], [0.5, 0.5, 0.0]], dtype=np.float32)
    l1 = distances.brute_force_pairs(q, b, "l1")
    assert l1.tolist() == [[-0.5, -1.0, 0.0]]
    # intersection = 1 - L1/2 for histograms summing to 1: 0.75, 0.5, 1
    assert (1 + l1 / 2).tolist() == [[0.75, 0.5, 1.0]]
    d1 = distances.brute_force_pairs(q, b, "d1")
    # |q-r| / (1 + q + r) summed: 0.25/1.75 + 0.25/1.25; 0.5/1.5 + 0.5/1.5; 0
    expected = np.float32(0.25 / 1.75 + 0.25 / 1.25), np.float32(1 / 3 + 1 / 3), np.float32(0)
    assert d1.tolist() == [[-float(e) for e in expected]]
    with pytest.raises(ValueError, match="unknown distance"):
        distances.pair_scores(q, b, [0], [0], "cosine")


@settings(max_examples=60, deadline=None)
@given(
    nq=st.integers(1, 10),
    nb=st.integers(2, 30),
    dim=st.integers(1, 7),
    metric=st.sampled_from(["l1", "d1"]),
    duplicates=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    subsets=st.integers(1, 3),
    k=st.integers(1, 6),
)
def test_exact_distances_blocked_equal_the_pair_by_pair_specification(
    nq, nb, dim, metric, duplicates, seed, subsets, k
):
    rng = np.random.default_rng(seed)
    # histograms with few distinct values: exact ties and duplicate references are common
    xb = (rng.integers(0, 4, size=(nb, dim)) / 4).astype(np.float32)
    if duplicates:
        xb[nb // 2 :] = xb[: nb - nb // 2]
    original = rng.integers(-1, nb, size=nq)
    xq = np.abs(xb[np.maximum(original, 0)] + rng.integers(-1, 2, size=(nq, dim)) / 4).astype(
        np.float32
    )
    brute = distances.brute_force_pairs(xq, xb, metric)
    block = distances.block_scores(xq, xb, metric)
    assert np.array_equal(block.astype(np.float64), brute)  # bit for bit, not approximately
    n_orig = len(np.unique(original[original >= 0]))
    sizes = tuple(sorted({max(n_orig, 1), nb})) if n_orig else (nb,)
    lay = layout(nb, original, min(subsets, nb), sizes, seed)
    expected = exact_ranks(xq, xb, original, metric, lay)
    ids = np.array([f"R{i:06d}" for i in range(nb)])
    s = rank_plan.searcher(xb, metric, search.reference_order(ids))
    pairs, got = rank_plan.search_block(s, xq, original, lay, k)
    for field in (
        "rank",
        "rank_in_subset",
        "rank_by_size",
        "better",
        "better_in_subset",
        "better_by_size",
    ):
        assert np.array_equal(getattr(got, field), getattr(expected, field)), field
    # kNN: the k best by score, ties by reference id, as the descriptor track orders them
    for q in range(nq):
        order = np.lexsort((ids, -brute[q]))[: min(k, nb)]
        mine = pairs.query == q
        assert pairs.reference[mine].tolist() == order.tolist()
        assert pairs.score[mine].tolist() == brute[q][order].tolist()


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
    assert s == {
        "queries": 5,
        "mean_rank": 12.8,
        "median_rank": 2.0,
        "recall_at_1": 0.4,
        "recall_at_10": 0.8,
    }
    line = fit_line(np.array([500, 1000, 2000]), np.array([5.0, 10.0, 20.0]))
    assert line["slope"] == pytest.approx(0.01) and line["r2"] == pytest.approx(1.0)
    # a flat series: the line is exact but explains nothing, so no R²
    flat = fit_line(np.array([500, 1000, 2000]), np.array([1.0, 1.0, 1.0]))
    assert flat["slope"] == pytest.approx(0.0) and flat["r2"] is None


def test_chance_and_shares_of_the_library_by_hand():
    # library of 9: a random order's mean rank is (9 + 1) / 2 = 5
    s = summary(np.array([1, 2, 3, 6]), n_refs=9)
    assert s["chance_mean_rank"] == 5.0 and s["library_size"] == 9
    assert s["mean_rank"] == 3.0 and s["mean_rank_share"] == 3 / 9
    assert s["median_rank"] == 2.5 and s["median_rank_share"] == 2.5 / 9
    # standard error of a random order's mean over 4 queries: sqrt((81 - 1) / 12 / 4) = 1.29;
    # 3.0 is within 1.96 of them below 5 (5 - 2.53 = 2.47): not distinguishable from chance
    assert s["at_chance"] is True
    assert summary(np.array([1, 1, 1, 2]), n_refs=9)["at_chance"] is False
    assert summary(np.array([9, 9, 9, 9]), n_refs=9)["at_chance"] is True  # worse than chance


def test_queries_needed_curve_and_count():
    rows = queries_needed(np.arange(1, 101), seed=1, resamples=200)
    medians = [r for r in rows if r["statistic"] == "median"]
    assert medians[0]["queries"] == 10 and medians[-1]["queries"] == 100
    assert medians[-1]["value"] == 50.5
    assert [r["value"] for r in rows if r["statistic"] == "mean"][-1] == 50.5
    assert all(r["ci_low"] <= r["value"] <= r["ci_high"] for r in rows)
    assert (
        medians[-1]["ci_high"] - medians[-1]["ci_low"]
        < medians[0]["ci_high"] - medians[0]["ci_low"]
    )
    # constant ranks: every interval is the value itself, so the first count (10) suffices
    flat = queries_needed_summary(queries_needed(np.full(30, 7), seed=0, resamples=50), n_refs=1000)
    assert [(r["statistic"], r["queries_needed"], r["share_of_library"]) for r in flat] == [
        ("mean", 10, 0.01),
        ("median", 10, 0.01),
    ]


def test_queries_needed_is_the_first_count_from_which_every_interval_fits():
    curve = [
        {"statistic": "mean", "queries": n, "value": v, "ci_low": lo, "ci_high": hi}
        for n, v, lo, hi in [
            (10, 9, 5, 15),
            (20, 10, 9.5, 10.5),
            (40, 10, 8, 12),
            (80, 10, 9.2, 10.8),
            (160, 10, 9.5, 10.4),
        ]
    ]
    # 20 fits but 40 does not: the count is 80, where every later interval stays within ±10 %
    (got,) = queries_needed_summary(curve, n_refs=400)
    assert (got["queries_needed"], got["share_of_library"], got["final"]) == (80, 0.2, 10)
    wide = [dict(r, ci_high=r["ci_high"] + 5) for r in curve]
    assert queries_needed_summary(wide, n_refs=400)[0]["queries_needed"] is None


def test_paired_test_by_hand():
    # differences 1..5 all positive: W = 0, exact two-sided p = 2 / 2^5
    got = paired_test(np.array([2, 3, 4, 5, 6]), np.array([1, 1, 1, 1, 1]))
    assert (got["pairs"], got["differ"], got["statistic"], got["p_value"]) == (5, 5, 0.0, 0.0625)
    # six positive differences: p = 2 / 2^6; equal pairs are dropped (Wilcoxon's rule)
    got = paired_test(np.array([2, 3, 4, 5, 6, 7, 9]), np.array([1, 1, 1, 1, 1, 1, 9]))
    assert (got["differ"], got["p_value"]) == (6, 0.03125)
    same = paired_test(np.array([1, 2]), np.array([1, 2]))
    assert (same["differ"], same["p_value"], same["statistic"]) == (0, 1.0, None)
    # Holm: sorted p 0.01, 0.03, 0.04 times 3, 2, 1, then kept non-decreasing
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
