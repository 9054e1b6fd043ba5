"""The bootstrap and tie-sensitivity specification (disc21spark/matching/stats/): hand-computed
cases per statistic, and properties against the matching-track specification."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disc21spark.matching import kernel
from disc21spark.matching.model import GroundTruth, Settings
from disc21spark.matching.oracle import bootstrap as spec
from disc21spark.matching.oracle import spec as matching_spec
from disc21spark.matching.stats import compare, weighted, weights
from disc21spark.matching.stats.compare import holm
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.weights import THRESHOLDS, poisson_weights, query_keys
from tests.helpers import make_gt, random_submission, weighing


def counts(hits, misses, positives, found1=None, found10=None) -> weighted.WeightedCounts:
    hits = np.array(hits, dtype=np.int64).reshape(len(hits), -1)
    b = hits.shape[1]
    return weighted.WeightedCounts(
        misses=np.array(misses, dtype=np.int64).reshape(hits.shape),
        hits=hits,
        found={1: np.array(found1 or [0] * b), 10: np.array(found10 or [0] * b)},
        positives=np.array(positives, dtype=np.int64).reshape(b),
    )


def test_micro_ap_by_hand():
    # level 1: a true pair first (1/1); level 2: behind one non-match (2/3); 2 positives
    ap = weighted.replicates(counts([1, 1], [0, 1], [2]))["micro_ap"]
    assert ap[0] == pytest.approx(0.5 * 1 + 0.5 * 2 / 3, abs=1e-15)


def test_a_query_drawn_twice_stands_as_two_copies():
    # one non-match ahead, then a true pair of weight 2: positions 2 and 3, precisions
    # 1/2 and 2/3, of 2 weighted positives
    ap = weighted.replicates(counts([2], [1], [2]))["micro_ap"]
    assert ap[0] == pytest.approx(0.5 * 1 / 2 + 0.5 * 2 / 3, abs=1e-15)


def test_recall_at_p90_by_hand():
    # 9 true pairs first (precision 1), then one behind 2 non-matches (10/12 < 0.9)
    r = weighted.replicates(counts([9, 1], [0, 2], [20]))
    assert r["recall_at_p90"][0] == 9 / 20
    assert weighted.replicates(counts([1], [1], [4]))["recall_at_p90"][0] == 0.0  # never 0.9


def test_recall_at_rank_by_hand():
    r = weighted.replicates(counts([3], [0], [4], found1=[1], found10=[3]))
    assert (r["recall_at_rank1"][0], r["recall_at_rank10"][0]) == (0.25, 0.75)


def test_a_resample_without_positives_has_no_figure():
    r = weighted.replicates(counts([[0, 1]], [[0, 0]], [0, 1]))
    assert np.isnan(r["micro_ap"][0]) and r["micro_ap"][1] == 1.0


def test_optimistic_ties_by_hand():
    # a true pair tied with a non-match: pessimistic 1/2, optimistic 1
    gt = make_gt(2, 1)
    q = np.array(["Q000", "Q001"], dtype=object)
    ref = np.array(["R000", "R009"], dtype=object)
    u = spec.bootstrap(q, ref, np.array([0.5, 0.5]), gt, Resampling(0, 0.95, 0))
    assert u.micro_ap_optimistic == 1.0
    assert matching_spec.evaluate(q, ref, np.array([0.5, 0.5]), gt).micro_ap == 0.5
    assert u.replicates == {} and u.interval("micro_ap") is None


def test_weights_are_poisson_and_seeded():
    keys = query_keys([f"Q{i}" for i in range(4000)], seed=3)
    w = poisson_weights(keys, 0, 50)
    assert w.dtype == np.uint8 and w.shape == (4000, 50)
    assert abs(w.mean() - 1) < 0.01 and abs(w.var() - 1) < 0.02
    assert abs((w == 0).mean() - np.exp(-1)) < 0.01
    # a slice of resamples is the same slice of the whole; another seed, other weights
    np.testing.assert_array_equal(poisson_weights(keys, 20, 30), w[:, 20:30])
    other = poisson_weights(query_keys([f"Q{i}" for i in range(4000)], seed=4), 0, 50)
    assert (other != w).mean() > 0.5
    # the distribution function, exactly: F(0) = e^-1
    assert abs(int(THRESHOLDS[0]) - np.exp(-1) * 2**53) < 2


def test_weights_do_not_depend_on_the_block_they_are_drawn_in(monkeypatch):
    keys = query_keys([f"Q{i}" for i in range(300)], seed=5)
    whole = poisson_weights(keys, 3, 70)
    # a block smaller than one key's resamples: one key at a time
    monkeypatch.setattr(weights, "BLOCK", 7)
    np.testing.assert_array_equal(poisson_weights(keys, 3, 70), whole)
    monkeypatch.setattr(weights, "BLOCK", 130)
    np.testing.assert_array_equal(poisson_weights(keys, 3, 70), whole)
    assert poisson_weights(keys[:0], 0, 5).shape == (0, 5)


def test_weights_are_the_generators_by_its_definition():
    # SplitMix64's finaliser of key + (b + 1) · golden, its top 53 bits against the
    # Poisson(1) distribution function, in Python integers: rare weights (5 and more) too
    keys = query_keys([f"Q{i}" for i in range(400)], seed=8)
    for i in (0, 7, 399):  # the key: the id's BLAKE2b, 8 bytes, keyed by the seed's text
        digest = hashlib.blake2b(f"Q{i}".encode(), digest_size=8, key=b"8").digest()
        assert int(keys[i]) == int.from_bytes(digest, "little")
    got = poisson_weights(keys, 3, 43)
    mask = (1 << 64) - 1
    for row, key in enumerate(keys.tolist()):
        for b in range(3, 43):
            z = (key + (b + 1) * 0x9E3779B97F4A7C15) & mask
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
            z ^= z >> 31
            expected = sum(int(t) <= z >> 11 for t in THRESHOLDS)
            assert got[row, b - 3] == expected
    assert got.max() >= 5


def test_weights_drawn_in_threads_are_the_same(monkeypatch):
    keys = query_keys([f"Q{i}" for i in range(3000)], seed=6)
    whole = poisson_weights(keys, 2, 60)
    monkeypatch.setattr(weights, "BLOCK", 58 * 40)  # 75 blocks of 40 keys
    np.testing.assert_array_equal(poisson_weights(keys, 2, 60, threads=3), whole)
    # a block that fails in a thread fails the draw, in the caller's thread
    draw = weights._draw

    def fails_late(block, index):
        if block[0] == keys[2960]:
            raise MemoryError("no room for this block")
        return draw(block, index)

    monkeypatch.setattr(weights, "_draw", fails_late)
    with pytest.raises(MemoryError, match="no room"):
        poisson_weights(keys, 2, 60, threads=3)


def test_a_tables_weights_are_the_drawn_ones(monkeypatch):
    universe = query_keys([f"Q{i}" for i in range(500)], seed=9)
    drawn = poisson_weights(universe, 0, 120)
    table = weights.Table.draw(universe[::-1], 100)  # any order: kept sorted
    some = universe[[7, 3, 3, 499]]
    # rows of the table, for any keys it holds and resamples below its 100
    got = poisson_weights(some, 10, 90, table=table)
    np.testing.assert_array_equal(got, drawn[[7, 3, 3, 499], 10:90])
    keys, column = weights.in_table_order(*np.unique(universe, return_inverse=True), table)
    assert keys is table.keys
    np.testing.assert_array_equal(
        poisson_weights(keys, 0, 100, table=table)[column], drawn[:, :100]
    )
    # a key it does not hold, or resamples beyond it: drawn as without it
    other = np.concatenate([some, query_keys(["elsewhere"], seed=9)])
    got = poisson_weights(other, 0, 5, table=table)[:4]
    np.testing.assert_array_equal(got, drawn[[7, 3, 3, 499], :5])
    got = poisson_weights(some, 90, 120, table=table)
    np.testing.assert_array_equal(got, drawn[[7, 3, 3, 499], 90:])
    # no table over the limit, nor without resamples
    monkeypatch.setattr(weights, "TABLE_MAX_BYTES", 10)
    assert weights.Table.draw(universe, 100) is None and weights.Table.draw(universe, 0) is None


def test_a_ground_truths_keys_and_weights_are_drawn_once_as_a_value():
    gt = make_gt(40, 5)
    drawn = weighted.Drawn.of(gt, Resampling(30, 0.9, 3))
    np.testing.assert_array_equal(drawn.keys, query_keys(gt.query_ids, 3))
    np.testing.assert_array_equal(drawn.positive_keys, weighted.positive_keys(gt, 3))
    np.testing.assert_array_equal(drawn.table.keys, np.unique(drawn.keys))
    np.testing.assert_array_equal(drawn.table.weights, poisson_weights(drawn.table.keys, 0, 30))
    assert drawn.fits(gt, Resampling(30, 0.95, 3))  # the confidence draws nothing
    assert not drawn.fits(gt, Resampling(30, 0.9, 4)) and not drawn.fits(make_gt(41, 5), drawn.r)
    other = GroundTruth(
        "gt", gt.query_ids[::-1].copy(), gt.positive_queries, gt.positive_references
    )
    assert not drawn.fits(other, drawn.r)  # the same counts, other queries' keys
    # handed down with settings, the settings' own resampling (its confidence) is used
    asked = Settings(0, 10, Resampling(30, 0.95, 3), drawn=drawn)
    assert weighted.drawn_for(gt, asked).r is asked.resampling
    with pytest.raises(ValueError, match="another ground truth"):
        weighted.drawn_for(other, asked)
    # no resample: nothing hashed, nothing drawn
    none = weighted.Drawn.of(gt, Resampling(0, 0.9, 3))
    assert none.table is None and not none.keys.any() and len(none.keys) == 40


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 6), st.integers(0, 5), st.integers(0, 2**20))
def test_running_sums_are_numpys_cumulative_sums(levels, resamples, seed):
    counts = np.random.default_rng(seed).integers(0, 1000, (levels, resamples))
    got = kernel.running_sums(counts)
    np.testing.assert_array_equal(got, np.cumsum(counts, axis=0))
    assert got.dtype == np.int64 and got is not counts


def identity(sample: spec.Sample) -> weighted.WeightedCounts:
    """The counts of a 'resample' weighing every query 1: the submission itself."""
    levels = weighted.levels_of(sample.score[sample.label])
    t = len(levels)
    miss = ~sample.label
    return weighted.WeightedCounts(
        misses=np.bincount(weighted.buckets(levels, sample.score[miss]), minlength=t + 1)[:t, None],
        hits=np.bincount(weighted.buckets(levels, sample.score[sample.label]), minlength=t)[
            :, None
        ],
        found={k: np.array([(sample.ranks < k).sum()]) for k in (1, 10)},
        positives=np.array([len(sample.positive_keys)]),
    )


def sample_of(frame, gt, seed=0) -> spec.Sample:
    q, ref, s = (frame[c].to_numpy() for c in ("query_id", "reference_id", "score"))
    e = matching_spec.encode(q, ref, s, gt)
    return spec.Sample(
        keys=query_keys(q, seed),
        unknown=e.unknown,
        score=e.score + 0.0,
        label=e.label,
        ranks=matching_spec.true_pair_ranks(e.query, e.score + 0.0, e.label),
        positive_keys=weighted.positive_keys(gt, seed),
    )


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), n=st.integers(0, 200), n_scores=st.sampled_from([1, 5, 10**6])
)
def test_every_weight_one_gives_the_official_figures(seed, n, n_scores):
    gt = make_gt(30, 20)
    frame = random_submission(np.random.default_rng(seed), gt, n, n_scores)
    official = matching_spec.evaluate(
        *(frame[c].to_numpy() for c in ("query_id", "reference_id", "score")), gt
    )
    sample = sample_of(frame, gt)
    r = weighted.replicates(identity(sample))
    assert r["micro_ap"][0] == pytest.approx(official.micro_ap, abs=1e-12)
    assert r["recall_at_p90"][0] == (official.recall_at_p90 or 0.0)
    assert r["recall_at_rank1"][0] == official.recall_at_rank1
    assert r["recall_at_rank10"][0] == official.recall_at_rank10
    # the pessimistic counts through the tie-sensitivity sum: the official bits
    c = identity(sample)
    hits, misses = c.hits[:, 0], c.misses[:, 0]
    exact = kernel.micro_ap(hits, *kernel.level_ends(hits, misses), gt.n_positives)
    assert exact == official.micro_ap


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 200), cut=st.integers(0, 200))
def test_counts_add_up_over_any_split_of_the_rows(seed, n, cut):
    gt = make_gt(30, 20)
    frame = random_submission(np.random.default_rng(seed), gt, n, 7)
    s = sample_of(frame, gt)
    r = Resampling(70, 0.9, 5)
    levels = weighted.levels_of(s.score[s.label])
    d = weighing(r)
    whole = weighted.miss_counts(weighted.Reach.of(levels, s.score), s.keys, s.unknown, d)
    cut = min(cut, len(s.score))
    a = weighted.miss_counts(
        weighted.Reach.of(levels, s.score[:cut]), s.keys[:cut], s.unknown[:cut], d
    )
    b = weighted.miss_counts(
        weighted.Reach.of(levels, s.score[cut:]), s.keys[cut:], s.unknown[cut:], d
    )
    for w, x, y in zip(whole, a, b):
        np.testing.assert_array_equal(w, x + y)


def test_resample_micro_ap_without_levels_is_zero():
    # a submission without a true positive: no levels, every resample's μAP 0
    none = np.zeros((0, 5), dtype=np.int64)
    got = kernel.micro_ap(none, none, none, np.full(5, 3), exact_columns=0)
    assert got.tolist() == [0.0] * 5


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    levels=st.integers(0, 300),
    columns=st.integers(1, 90),
    many=st.floats(0.05, 3.0),
)
def test_resample_micro_ap_keeps_its_order_of_addition(seed, levels, columns, many):
    # the intervals' bits: pass j adds the j-th true positive of every (level, column)
    # entry holding more than j, in row-major order, by np.bincount; each pass's sum is
    # added to the total (dense passes or not, the same float additions)
    rng = np.random.default_rng(seed)
    hits = rng.poisson(many, (levels, columns)) * (rng.random((levels, columns)) < 0.7)
    misses = rng.poisson(3 * many, (levels, columns))
    positives = hits.sum(axis=0) + rng.integers(0, 5, columns)
    k_end, n_end = kernel.level_ends(hits, misses)
    expected = np.zeros(columns)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(int(hits.max(initial=0))):
            entry = np.flatnonzero(hits > j)
            k = k_end.reshape(-1)[entry].astype(np.float64) - j
            n = n_end.reshape(-1)[entry].astype(np.float64) - j
            p = positives[entry % columns].astype(np.float64)
            terms = (k / p - (k - 1) / p) * (k / n)
            expected += np.bincount(entry % columns, weights=terms, minlength=columns)
    got = kernel.micro_ap(hits, k_end, n_end, positives, exact_columns=0)
    assert got.tobytes() == expected.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 3000),
    queries=st.sampled_from([1, 3, 40, 400]),
    levels=st.sampled_from([1, 2, 6, 300]),
    heavy=st.sampled_from([1, 3, 300, 600, 20000]),
)
def test_weighted_counts_are_the_sums_of_the_rows_weights(seed, n, queries, levels, heavy):
    # few queries and levels: a level's entries sum past the int16 product's SMALL_SUM
    # (it cuts them into runs; up to 300 a row, an uncut run would overflow int16);
    # heavier counts: an entry past SMALL_CELL (the float64 product instead); many levels
    # and queries: levels of one entry
    rng = np.random.default_rng(seed)
    keys = query_keys([f"Q{i}" for i in range(queries)], seed=seed % 7)[rng.integers(0, queries, n)]
    bucket = rng.integers(0, levels + 1, n)
    fixed = rng.random(n) < 0.1
    count = rng.integers(0, heavy + 1, n)
    r = Resampling(300, 0.9, seed % 7)
    w = poisson_weights(keys, 0, 300).astype(np.int64)
    w[fixed] = 1
    expected = np.zeros((levels + 1, 300), dtype=np.int64)
    np.add.at(expected, bucket, w * count[:, None])
    got = weighted.weighted_counts(bucket, keys, fixed, levels, weighing(r), count)
    np.testing.assert_array_equal(got, expected[:levels])
    ones = weighted.weighted_counts(bucket, keys, fixed, levels, weighing(r))
    np.add.at(expected, bucket, w * (1 - count[:, None]))
    np.testing.assert_array_equal(ones, expected[:levels])


def test_weighted_counts_past_float32s_whole_numbers_stay_exact():
    # counts far past int16 and float32's whole numbers: the float64 product, exact
    keys = query_keys(["Q1", "Q2", "Q3"], seed=0)
    count = np.array([2**24 + 1, 2**30 + 3, 7, 1])
    bucket = np.array([0, 0, 1, 1])
    rows = keys[[0, 1, 2, 0]]
    w = poisson_weights(rows, 0, 50).astype(np.int64)
    r = Resampling(50, 0.9, 0)
    got = weighted.weighted_counts(bucket, rows, np.zeros(4, dtype=bool), 2, weighing(r), count)
    expected = np.stack([w[:2].T @ count[:2], w[2:].T @ count[2:]])
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200))
def test_intervals_do_not_depend_on_row_order(seed, n):
    rng = np.random.default_rng(seed)
    gt = make_gt(30, 20)
    frame = random_submission(rng, gt, n, 7)
    r = Resampling(50, 0.95, 1)
    cols = ("query_id", "reference_id", "score")
    first = spec.bootstrap(*(frame[c].to_numpy() for c in cols), gt, r)
    shuffled = frame.sample(frac=1.0, random_state=int(rng.integers(1 << 31)))
    again = spec.bootstrap(*(shuffled[c].to_numpy() for c in cols), gt, r)
    assert first.to_dict() == again.to_dict()
    for name, values in first.replicates.items():
        assert values.tobytes() == again.replicates[name].tobytes()


def uncertain(micro_ap: list[float], optimistic: float = 0.5) -> Uncertainty:
    values = np.array(micro_ap, dtype=np.float64)
    found = {
        name: values
        for name in ("micro_ap", "recall_at_p90", "recall_at_rank1", "recall_at_rank10")
    }
    return Uncertainty(Resampling(len(values), 0.95, 0), found, optimistic)


def test_paired_comparison_by_hand():
    # differences 0.1, 0, -0.1, 0.4: one flip and one tie (half a flip) of 4
    n = compare.compare(uncertain([0.5, 0.6, 0.4, 0.7]), uncertain([0.4, 0.6, 0.5, 0.3]), 0.05)
    assert n.flip_share == 0.375
    assert n.p_value == (1 + 2) / (1 + 4)
    d = np.array([0.5, 0.6, 0.4, 0.7]) - np.array([0.4, 0.6, 0.5, 0.3])
    assert (n.low, n.high) == tuple(np.quantile(d, [0.025, 0.975]))
    assert compare.compare(None, uncertain([0.1]), 0.0).p_value is None


def test_the_difference_a_query_set_can_detect_by_hand():
    # d = 0.1, 0, -0.1, 0.4: mean 0.1, sd (ddof 1) = sqrt((0 + 0.01 + 0.04 + 0.09) / 3)
    n = compare.compare(uncertain([0.5, 0.6, 0.4, 0.7]), uncertain([0.4, 0.6, 0.5, 0.3]), 0.05)
    sd = np.sqrt(0.14 / 3)
    z = 1.959963984540054 + 0.8416212335729143  # z(0.975) + z(0.8): 95 %, 80 % power
    assert n.detectable == pytest.approx(z * sd, rel=1e-12)
    # the spread falls as 1/sqrt(n): a difference half the detectable one needs 4n queries
    assert compare.queries_needed(100, n.detectable, n.detectable) == 100
    assert compare.queries_needed(100, n.detectable, -n.detectable / 2) == 400
    assert compare.queries_needed(100, n.detectable, 0.0) is None
    assert compare.queries_needed(100, None, 0.1) is None
    assert compare.detectable(np.array([0.1]), 0.95) is None  # one replicate: no spread
    keys = [(-0.6, -1.0, "a"), (-0.55, -1.0, "b")]
    found = [uncertain([0.5, 0.6, 0.4, 0.7]), uncertain([0.4, 0.6, 0.5, 0.3])]
    first, last = compare.board_columns([0.6, 0.55], keys, found, n_queries=25_000)
    assert first["next_detectable"] == n.detectable
    assert first["next_queries_needed"] == compare.queries_needed(25_000, n.detectable, 0.05)
    assert last["next_detectable"] is None and last["next_queries_needed"] is None


def test_holm_and_tiers_by_hand():
    # p 0.01, 0.04, 0.03 (m = 3): 3·0.01 = 0.03, then max(0.03, 2·0.03) = 0.06, then
    # max(0.06, 1·0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    pairs = [
        compare.Neighbour(0.1, None, None, None, p, a)
        for p, a in zip([0.01, 0.04, 0.03], [0.03, 0.06, 0.06])
    ]
    assert compare.tiers(pairs, 0.95) == [1, 2, 2, 2]
    assert compare.tiers(pairs, 0.9) == [1, 2, 3, 4]  # α = 0.1: every pair separates


def test_tie_flags_by_hand():
    # board: a (0.6), b (0.5), c (0.4); with optimistic ties b jumps to 0.7
    keys = [(-0.6, -1.0, "a"), (-0.5, -1.0, "b"), (-0.4, -1.0, "c")]
    assert compare.optimistic_places(keys, [0.6, 0.7, 0.4]) == [2, 1, 3]
    found = [uncertain([0.6, 0.6], 0.6), uncertain([0.5, 0.5], 0.7), uncertain([0.4, 0.3], 0.4)]
    columns = compare.board_columns([0.6, 0.5, 0.4], keys, found)
    assert [c["tie_sensitive"] for c in columns] == [True, True, False]
    assert [c["place_optimistic"] for c in columns] == [2, 1, 3]
    assert columns[0]["next_flip_share"] == 0.0 and columns[2]["next_difference"] is None
    # a submission without the figure (a leaderboard of an older run): no flag at all
    columns = compare.board_columns([0.6, 0.5, 0.4], keys, [*found[:2], None])
    assert [c["tie_sensitive"] for c in columns] == [None, None, None]
    assert columns[1]["next_p_adjusted"] is None and columns[1]["tier"] == columns[2]["tier"]


def test_the_board_says_the_gap_its_queries_tell_apart():
    from disc21spark.pool import report

    rows = [
        {"status": "ok", "n_queries": 25_000, "next_detectable": 0.03},
        {"status": "ok", "n_queries": 25_000, "next_detectable": 0.01},
        {"status": "ok", "n_queries": 25_000, "next_detectable": 0.02},
        {"status": "ok", "n_queries": 25_000, "next_detectable": None},  # the last place
        {"status": "invalid", "n_queries": None, "next_detectable": None},
    ]
    note = report._detectable_note(rows)
    assert "With these 25,000 queries, a μAP gap between neighbours under 0.0200 " in note
    assert report._detectable_note([{**r, "next_detectable": None} for r in rows]) == ""
    # the page says it under its board too, and nothing without intervals
    from disc21spark.pool import page

    line = page._detectable([r for r in rows if r["status"] == "ok"])
    assert line.startswith('<p class="summary" id="detectable">With these 25,000 queries')
    assert "under 0.0200 is too small to tell apart" in line
    assert page._detectable([{**rows[0], "next_detectable": None}]) == ""


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 200),
    n_levels=st.integers(0, 12),
    resamples=st.sampled_from([0, 7]),
)
def test_both_orders_buckets_come_from_one_search(seed, n, n_levels, resamples):
    # miss_counts finds the pessimistic and optimistic buckets from one search (a Reach):
    # the same counts as ``buckets`` searched in each order, ties and 0.0 included
    rng = np.random.default_rng(seed)
    grid = np.round(rng.random(8), 1)
    levels = weighted.levels_of(rng.choice(grid, n_levels)) if n_levels else np.zeros(0)
    score = rng.choice(np.r_[grid, 0.0], n) + 0.0
    keys = rng.integers(0, 2**63, n).astype(np.uint64)
    fixed = rng.random(n) < 0.2
    r = Resampling(resamples=resamples, seed=3)
    t = len(levels)
    expected = (
        weighted.weighted_counts(weighted.buckets(levels, score), keys, fixed, t, weighing(r)),
        # optimistic: the first level each score is strictly ahead of
        np.bincount(np.searchsorted(-levels, -score, "right"), minlength=t + 1)[:t],
    )
    got = weighted.miss_counts(weighted.Reach.of(levels, score), keys, fixed, weighing(r))
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
