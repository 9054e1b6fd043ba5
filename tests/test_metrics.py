"""The numpy specification on cases computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disc21spark.matching.model import GroundTruth, PRCurve
from disc21spark.matching.oracle.spec import evaluate, thin_curve


def gt_of(pairs, distractors=()):
    queries = [q for q, _ in pairs] + list(distractors)
    return GroundTruth(
        "gt",
        np.array(list(dict.fromkeys(queries)), dtype=object),
        np.array([q for q, _ in pairs], dtype=object),
        np.array([r for _, r in pairs], dtype=object),
    )


def run(preds, gt):
    if not preds:
        return evaluate([], [], np.zeros(0), gt)
    q, r, s = zip(*preds)
    return evaluate(list(q), list(r), np.array(s, dtype=float), gt)


def seed_compute_micro_ap(predictions, gold_positives, total_positives):
    """The scoring recipe of the DISC21 evaluation card (shared/seeds/000), as written there."""
    sorted_preds = sorted(predictions, key=lambda x: x[2], reverse=True)
    tp, fp, ap_sum, prev_recall = 0, 0, 0.0, 0.0
    for q, r, _ in sorted_preds:
        if (q, r) in gold_positives:
            tp += 1
        else:
            fp += 1
        precision = tp / (tp + fp)
        recall = tp / total_positives
        ap_sum += precision * (recall - prev_recall)
        prev_recall = recall
    return ap_sum


GT4 = gt_of([("q1", "r1"), ("q2", "r2"), ("q3", "r3"), ("q4", "r4")], distractors=["q5"])


def test_hand_computed_micro_ap():
    # order: match, miss, match → 1·¼ + 0 + ⅔·¼ = 5/12
    m = run([("q1", "r1", 0.9), ("q2", "rx", 0.8), ("q3", "r3", 0.7)], GT4)
    assert m.micro_ap == pytest.approx(5 / 12, abs=1e-15)
    assert m.n_true_positives == 2 and m.n_predictions == 3 and m.n_positives == 4


def test_constant_score_earns_nothing_more_than_the_worst_order():
    # all scores equal: both misses come first → ½·⅓ + ½·½ = 5/12 with 2 positives
    gt = gt_of([("q1", "r1"), ("q2", "r2")])
    preds = [("q1", "r1", 1.0), ("q2", "r2", 1.0), ("q1", "ry", 1.0), ("q2", "rz", 1.0)]
    assert run(preds, gt).micro_ap == pytest.approx(5 / 12, abs=1e-15)


def test_tie_straddling_a_match_and_a_miss_is_pessimistic():
    gt = gt_of([("q1", "r1"), ("q2", "r2")])
    # the 0.9 tie puts the miss first: miss, match, match → ½·½ + ½·⅔ = 7/12
    m = run([("q1", "r1", 0.9), ("q2", "rz", 0.9), ("q2", "r2", 0.5)], gt)
    assert m.micro_ap == pytest.approx(7 / 12, abs=1e-15)
    # without the tie the match leads: 1·½ + ½·⅔ = 5/6
    m = run([("q1", "r1", 0.91), ("q2", "rz", 0.9), ("q2", "r2", 0.5)], gt)
    assert m.micro_ap == pytest.approx(5 / 6, abs=1e-15)


def test_negative_zero_ties_with_zero():
    gt = gt_of([("q1", "r1")])
    a = run([("q1", "r1", 0.0), ("q1", "rz", -0.0)], gt)
    assert a.micro_ap == pytest.approx(0.5 * 1.0, abs=1e-15)  # miss first → ½ precision


def test_seed_recipe_agrees_without_ties():
    preds = [
        ("q1", "r1", 0.95),
        ("q5", "r9", 0.9),
        ("q2", "r2", 0.8),
        ("q3", "rx", 0.7),
        ("q3", "r3", 0.6),
        ("q4", "r4", 0.1),
    ]
    gold = {("q1", "r1"), ("q2", "r2"), ("q3", "r3"), ("q4", "r4")}
    assert run(preds, GT4).micro_ap == pytest.approx(
        seed_compute_micro_ap(preds, gold, 4), abs=1e-15
    )


def test_operating_point_at_precision_90():
    gt = gt_of([(f"q{i}", f"r{i}") for i in range(20)])
    # 9 matches, 1 miss, 9 matches, then misses: precision 18/19 ≥ 0.9 at recall 18/20
    preds = [(f"q{i}", f"r{i}", 1 - i / 100) for i in range(9)]
    preds += [("q19", "bad", 0.905)]
    preds += [(f"q{i}", f"r{i}", 0.9 - i / 100) for i in range(9, 18)]
    preds += [(f"q{i}", "bad", 0.1) for i in range(5)]
    m = run(preds, gt)
    assert m.recall_at_p90 == pytest.approx(18 / 20)
    assert m.threshold_at_p90 == pytest.approx(0.9 - 17 / 100)
    assert m.precision_at_p90 == pytest.approx(18 / 19)


def test_precision_90_never_reached():
    gt = gt_of([("q1", "r1")])
    m = run([("q1", "x", 0.9), ("q1", "r1", 0.5)], gt)
    assert m.recall_at_p90 is None and m.threshold_at_p90 is None


def test_ranks_count_ties_against_the_truth():
    gt = gt_of([("q1", "r1"), ("q2", "r2"), ("q3", "r3")])
    preds = [
        ("q1", "r1", 0.5),
        ("q1", "a", 0.5),
        ("q1", "b", 0.9),  # rank 2 (tie counted)
        ("q2", "r2", 0.7),
        ("q2", "a", 0.1),  # rank 0
        # q3's truth absent: infinite rank
    ]
    m = run(preds, gt)
    assert m.recall_at_rank1 == pytest.approx(1 / 3)
    assert m.recall_at_rank10 == pytest.approx(2 / 3)


def test_distractors_and_unknown_queries_are_false_positives():
    gt = gt_of([("q1", "r1")], distractors=["d1", "d2"])
    m = run([("d1", "r1", 0.99), ("zz", "r1", 0.98), ("q1", "r1", 0.5)], gt)
    assert m.micro_ap == pytest.approx(1 / 3)
    assert m.n_unknown_query_predictions == 1
    assert m.n_queries == 3 and m.n_queries_with_predictions == 3


def test_empty_predictions_score_zero():
    m = run([], GT4)
    assert m.micro_ap == 0.0 and m.recall_at_p90 is None
    assert m.recall_at_rank1 == 0.0 and m.n_predictions == 0 and len(m.curve) == 0


def test_duplicates_and_non_finite_scores_are_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        run([("q1", "r1", 0.5), ("q1", "r1", 0.4)], GT4)
    with pytest.raises(ValueError, match="finite"):
        run([("q1", "r1", float("nan"))], GT4)


def test_curve_peaks_at_true_positives_and_closes_at_the_end():
    m = run([("q1", "r1", 0.9), ("q2", "rx", 0.8), ("q3", "r3", 0.7), ("q4", "x", 0.1)], GT4)
    np.testing.assert_allclose(m.curve.precision, [1.0, 2 / 3, 2 / 4])
    np.testing.assert_allclose(m.curve.recall, [0.25, 0.5, 0.5])
    np.testing.assert_allclose(m.curve.threshold, [0.9, 0.7, 0.1])


def test_thin_curve_keeps_ends_and_the_requested_point():
    c = PRCurve(np.linspace(1, 0, 101), np.linspace(0, 1, 101), np.arange(101.0))
    t = thin_curve(c, 10, keep=37)
    assert len(t) == 11 and 37.0 in t.threshold and t.threshold[0] == 0 and t.threshold[-1] == 100


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 4)), max_size=40),
    st.integers(1, 10),
)
def test_micro_ap_matches_a_direct_position_by_position_loop(rows, n_extra_positives):
    """The definition, with the pessimistic tie order made explicit, on random small inputs."""
    pairs = {(f"q{q}", f"r{r}"): s / 4 for q, r, s in rows}  # few scores → many ties
    positives = [(f"q{i}", f"r{i}") for i in range(7)][:n_extra_positives]
    gt = gt_of(positives)
    preds = [(q, r, s) for (q, r), s in pairs.items()]
    m = run(preds, gt)
    gold = set(positives)
    ordered = sorted(preds, key=lambda p: (-p[2], (p[0], p[1]) in gold))
    tp, ap, prev = 0, 0.0, 0.0
    for i, (q, r, _) in enumerate(ordered, start=1):
        tp += (q, r) in gold
        recall = tp / len(positives)
        ap += (recall - prev) * tp / i
        prev = recall
    assert m.micro_ap == pytest.approx(ap, abs=1e-12)
    assert 0.0 <= m.micro_ap <= 1.0


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    n_scores=st.sampled_from([1, 3, 50, 10**6]),
    parts=st.integers(1, 7),
    base=st.sampled_from([0, 10**9]),
)
def test_counted_positions_equal_the_sorted_order(seed, n, n_scores, parts, base):
    """The distributed plan's counting (positions.py), partition by partition, gives every
    true pair the position and rank of the specification's sort, ties and -0.0 included,
    unknown queries (code -1) and codes too large for a table of them (``base``)."""
    from disc21spark.matching import positions
    from disc21spark.matching.oracle.spec import pessimistic_order, true_pair_ranks
    from disc21spark.matching.stats import weighted

    rng = np.random.default_rng(seed)
    query = rng.integers(0, 20, n) + base
    score = rng.integers(0, n_scores, n) / n_scores - 0.3
    score[rng.random(n) < 0.1] *= -0.0
    label = rng.random(n) < 0.3
    unknown = rng.random(n) < 0.1
    query[unknown], label[unknown] = -1, False
    truth = positions.TrueScores.of(query[label], score[label])
    total = positions.Counts.zero(truth)
    cuts = np.sort(rng.integers(0, n + 1, parts - 1))
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, n]):
        misses = score[a:b][~label[a:b]]
        reached = weighted.Reach.of(truth.levels, misses).reached
        total.add(positions.count_rows(truth, query[a:b], label[a:b], score[a:b], reached))
    pos, thr = positions.positions(truth, total)
    order = pessimistic_order(score + 0.0, label)
    np.testing.assert_array_equal(pos, np.flatnonzero(label[order]) + 1)
    np.testing.assert_array_equal(thr, (score + 0.0)[order][label[order]])
    expected = np.sort(true_pair_ranks(query, score + 0.0, label))
    np.testing.assert_array_equal(np.sort(positions.ranks(total)), expected)
    assert total.n == n


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    n_scores=st.sampled_from([1, 3, 50, 10**6]),
    curve_points=st.sampled_from([2, 5, 1000]),
)
def test_the_in_process_count_gives_the_specifications_figures(seed, n, n_scores, curve_points):
    """The in-process engine's passes on a table (``api.tables.score_table``: counts, no
    sort of the pairs) equal ``spec.evaluate_encoded`` bit for bit: every figure, the
    curve and its thinning, unknown queries, ties, -0.0 and no true pair at all."""
    import pyarrow as pa

    from disc21spark.api.tables import score_table
    from disc21spark.matching.oracle.spec import encode, evaluate_encoded

    rng = np.random.default_rng(seed)
    gt = gt_of([(f"q{i}", f"r{i}") for i in range(12)], [f"q{i}" for i in range(12, 16)])
    q = rng.integers(0, 18, 4 * n)  # q16, q17: unknown queries
    r = np.where(rng.random(4 * n) < 0.4, q, rng.integers(0, 30, 4 * n))
    keys = rng.permutation(np.unique(q * 100 + r))[:n]  # distinct pairs, in random order
    score = rng.integers(0, n_scores, len(keys)) / n_scores - 0.3
    score[rng.random(len(keys)) < 0.1] *= -0.0
    query = np.array([f"q{k // 100}" for k in keys], dtype=object)
    reference = np.array([f"r{k % 100}" for k in keys], dtype=object)
    expected = evaluate_encoded(encode(query, reference, score, gt), gt, curve_points)
    table = pa.table({"query_id": query, "reference_id": reference, "score": score})
    got = score_table(table, "t", gt, (0, curve_points))
    assert got.to_dict() == expected.to_dict()
    for field in ("precision", "recall", "threshold"):
        np.testing.assert_array_equal(getattr(got.curve, field), getattr(expected.curve, field))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 80),
    n_scores=st.sampled_from([1, 3, 50]),
)
def test_weighed_ranks_equal_the_rows_repeated(seed, n, n_scores):
    """``positions.ranks_ge`` with weights (a small input's counts per query, each row
    standing for ``w`` rows: ``spark.plan``) equals it on the rows repeated ``w`` times,
    int64, with unknown queries (negative codes), a score of -inf (the grid's first
    split) and rows of weight 0."""
    from disc21spark.matching import positions

    rng = np.random.default_rng(seed)
    true_query = rng.integers(0, 6, rng.integers(0, 10))
    true_score = rng.integers(0, n_scores, len(true_query)) / n_scores
    truth = positions.TrueScores.of(true_query.astype(np.int64), true_score)
    query = rng.integers(-3, 8, n).astype(np.int64)
    score = rng.integers(0, n_scores, n) / n_scores
    score[rng.random(n) < 0.1] = -np.inf
    weights = rng.integers(0, 5, n).astype(np.int64)
    got = positions.ranks_ge(truth, query, score, weights)
    wanted = positions.ranks_ge(truth, np.repeat(query, weights), np.repeat(score, weights))
    assert got.dtype == wanted.dtype == np.int64
    np.testing.assert_array_equal(got, wanted)
