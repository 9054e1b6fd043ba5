"""The Spark plan equals the numpy specification, exactly, for any partitioning."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from disc21spark.matching import labels
from disc21spark.matching import plan as scoring
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.score import Scoring, score
from disc21spark.matching.spec import evaluate
from tests.helpers import assert_same, make_gt, random_submission


def pairs_frame(spark, frame: pd.DataFrame):
    df = spark.createDataFrame(frame, "query_id string, reference_id string, score double")
    return df.withColumn(labels.SUBMISSION, F.lit(0))


def compact_rows(spark, frame: pd.DataFrame, gt: GroundTruth):
    return labels.encoded(pairs_frame(spark, frame), gt)


def spark_metrics(spark, frame: pd.DataFrame, gt: GroundTruth, partitions: int, curve_points=5000):
    """The one scoring entry point, on trusted pairs (no checks), the rows counted in
    ``partitions`` partitions (and the repeat check's shuffle in as many)."""
    scoring = Scoring(gt, curve_points, partitions)
    pairs = pairs_frame(spark, frame).repartition(partitions)
    return score(spark, pairs, [0], scoring).metrics[0]


def spec_metrics(frame: pd.DataFrame, gt: GroundTruth, curve_points=5000):
    return evaluate(
        frame["query_id"].to_numpy(),
        frame["reference_id"].to_numpy(),
        frame["score"].to_numpy(),
        gt,
        curve_points,
    )


PARTITIONS = (1, 2, 7, 50)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 400),
    n_scores=st.sampled_from([1, 3, 50, 10**6]),
    # the random draws among the cheap partitionings: 50 partitions (most of them empty or
    # holding a pair or two) cost 8 s a scoring here, and its examples below hold it
    partitions=st.sampled_from(PARTITIONS[:3]),
)
# every partitioning at least once, on 400 pairs with many ties (each one equal to the
# specification is all of them equal to each other; a Spark scoring costs seconds here)
@example(seed=7, n=400, n_scores=3, partitions=1)
@example(seed=7, n=400, n_scores=3, partitions=2)
@example(seed=8, n=400, n_scores=50, partitions=7)
@example(seed=9, n=400, n_scores=1, partitions=50)
@example(seed=10, n=37, n_scores=10**6, partitions=50)
def test_spark_equals_specification_for_1_2_7_50_partitions(spark, seed, n, n_scores, partitions):
    rng = np.random.default_rng(seed)
    gt = make_gt(40, 25)
    frame = random_submission(rng, gt, n, n_scores)
    assert_same(spark_metrics(spark, frame, gt, partitions), spec_metrics(frame, gt))


def counted_rows(spark, rows):
    """The counting pass of ``rows`` as the plan runs it, with its broadcast."""
    truths = scoring.true_scores(rows)
    return scoring.counted(rows, spark.sparkContext.broadcast(truths)), truths


def test_all_equal_scores_count_against_one_true_score(spark):
    gt = make_gt(200, 100)
    rng = np.random.default_rng(3)
    frame = random_submission(rng, gt, 3000, 1)
    frame["score"] = 0.25
    expected = spec_metrics(frame, gt)
    assert expected.micro_ap < 0.1  # the pessimistic order: a constant score earns little
    assert_same(spark_metrics(spark, frame, gt, 7), expected)
    rows = compact_rows(spark, frame, gt).repartition(3)
    counts, truths = counted_rows(spark, rows)
    parts = counts.collect()
    # every true pair ties with every miss: each sits after all of them
    assert len(truths[0].levels) == 1 and len(parts) <= 3
    n_true = int(
        frame.merge(
            pd.DataFrame({"query_id": gt.positive_queries, "reference_id": gt.positive_references})
        ).shape[0]
    )
    assert sum(p["misses_ge"][0] for p in parts) == len(frame) - n_true
    assert sum(p["n"] for p in parts) == len(frame)


def test_positions_are_counted_without_shuffling_the_rows(spark):
    gt = make_gt(40, 25)
    frame = random_submission(np.random.default_rng(1), gt, 300, 10)
    rows = compact_rows(spark, frame, gt).repartition(5)
    counts, _ = counted_rows(spark, rows)
    plan = counts._jdf.queryExecution().executedPlan().toString()
    assert "Window" not in plan and "rangepartitioning" not in plan
    shuffles = plan.count("Exchange") - plan.count("BroadcastExchange")
    assert shuffles <= 1  # only the test's own repartition(5)
    # the driver receives one row per partition (one submission here)
    assert counts.count() <= 5


def test_thinned_curve_is_the_same_on_both_sides(spark):
    gt = make_gt(400, 300)
    frame = random_submission(np.random.default_rng(5), gt, 2000, 10**6)
    assert_same(spark_metrics(spark, frame, gt, 3, curve_points=20), spec_metrics(frame, gt, 20))


@pytest.mark.parametrize("partitions", [1, 4])
def test_realistic_submission_on_dev_ground_truth(spark, dev_gt_path, partitions):
    from disc21spark.testing.synth import read_ground_truth_csv, simulate_submission

    table = read_ground_truth_csv(dev_gt_path)
    has = table["reference_id"] != ""
    gt = GroundTruth(
        "dev",
        table["query_id"].to_numpy(dtype=object),
        table.loc[has, "query_id"].to_numpy(dtype=object),
        table.loc[has, "reference_id"].to_numpy(dtype=object),
    )
    frame = simulate_submission(table, 60_000, seed=partitions)
    spec = spec_metrics(frame, gt)
    assert gt.n_positives == 4991 and gt.n_queries == 25_000
    assert 0.3 < spec.micro_ap < 0.9
    assert_same(spark_metrics(spark, frame, gt, partitions), spec)


def test_partition_counts_of_a_pool_equal_the_specification():
    """The executors' function alone (no Spark): partitions that mix submissions, in
    Arrow batches, add up to each submission's sorted positions and ranks."""
    import pyarrow as pa

    from disc21spark.matching import positions
    from disc21spark.matching.spec import pessimistic_order, true_pair_ranks

    rng = np.random.default_rng(1)
    n = 3000
    sub = rng.integers(0, 4, n).astype(np.int32)
    query, label = rng.integers(0, 30, n), rng.random(n) < 0.2
    score = np.round(rng.random(n), 2)  # many ties
    truths = {
        k: positions.TrueScores.of(query[(sub == k) & label], score[(sub == k) & label])
        for k in range(4)
    }
    totals = {k: positions.Counts.zero(t) for k, t in truths.items()}
    for a, b in ((0, 700), (700, 1500), (1500, n)):
        batches = [
            pa.RecordBatch.from_pydict(
                {
                    "submission": sub[i:j],
                    "query_index": query[i:j],
                    "label": label[i:j],
                    "score": score[i:j],
                }
            )
            for i, j in zip(range(a, b, 100), range(a + 100, b + 100, 100))
        ]
        for batch in scoring.count_partition(iter(batches), truths):
            (r,) = batch.to_pylist()
            part = positions.Counts(
                r["n"], r["bottom"], np.array(r["misses_ge"]), np.array(r["ranks_ge"])
            )
            totals[r["submission"]].add(part)
    for k, truth in truths.items():
        mine = sub == k
        order = pessimistic_order(score[mine], label[mine])
        pos, _ = positions.positions(truth, totals[k])
        np.testing.assert_array_equal(pos, np.flatnonzero(label[mine][order]) + 1)
        expected = np.sort(true_pair_ranks(query[mine], score[mine], label[mine]))
        np.testing.assert_array_equal(np.sort(positions.ranks(totals[k])), expected)
        assert totals[k].n == mine.sum() and totals[k].bottom == score[mine].min()


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    parts=st.sampled_from([1, 2, 7]),
)
def test_census_of_partitions_adds_up_to_counting_by_hand(seed, n, parts):
    """The executors' census (no Spark): partitions holding whole (submission, query)
    groups, as the shuffle makes them, add up to each submission's counts by hand."""
    from collections import Counter

    from disc21spark.matching.census import FIGURES, partition_census

    rng = np.random.default_rng(seed)
    sub = rng.integers(0, 3, n).astype(np.int32)
    query, pair = rng.integers(-3, 12, n), rng.integers(0, 20, n)
    bad = rng.random(n) < 0.1
    part = (sub * 31 + query) % parts
    totals: dict[int, dict] = {}
    for k in range(parts):
        m = part == k
        for r in partition_census(sub[m], query[m], pair[m], bad[m]):
            mine = totals.setdefault(r["submission"], {f: 0 for f in FIGURES} | {"at": []})
            for f in FIGURES:
                mine[f] += r[f]
            mine["at"] += [] if r["repeating"] is None else [r["repeating"]]
    assert set(totals) == set(sub.tolist())
    for s, got in totals.items():
        m = sub == s
        copies = Counter(zip(query[m].tolist(), pair[m].tolist()))
        repeating = sorted(q for (q, _), c in copies.items() if c > 1)
        assert got["n"] == m.sum() and got["bad"] == bad[m].sum()
        assert got["unknown"] == (query[m] < 0).sum()
        assert got["known_queries"] == len({q for q in query[m].tolist() if q >= 0})
        assert got["repeats"] == sum(c - 1 for c in copies.values())
        assert min(got["at"], default=None) == (repeating[0] if repeating else None)


def test_labels_of_arrow_batches_are_the_ground_truths(monkeypatch):
    """The executors' labelling (no Spark): a query's index, or the unknown key of its
    hash, and a true pair exactly when the ground truth lists it; null ids are unknown."""
    import pyarrow as pa

    gt = make_gt(30, 12)
    rng = np.random.default_rng(4)
    n = 500
    q = [f"Q{i:03d}" for i in rng.integers(0, 35, n)]
    r = [f"R{i:03d}" for i in rng.integers(0, 15, n)]
    q[3], r[4] = None, None
    hashes = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    batch = pa.RecordBatch.from_pydict(
        {
            "submission": pa.array(np.zeros(n, np.int32)),
            "query_id": q,
            "reference_id": r,
            "score": rng.random(n),
            "query_hash": hashes,
            "pair": np.arange(n),
        }
    )
    dictionary = labels.Dictionary.of(gt)
    monkeypatch.setattr(labels, "GROUP_ROWS", 250)  # Spark's batches of 100 joined by 250
    pieces = [batch.slice(0, 0)] + [batch.slice(i, 100) for i in range(0, n, 100)]
    outs = list(labels.encode_batches(iter(pieces), dictionary))
    assert [b.num_rows for b in outs] == [300, 200]
    out = pa.Table.from_batches(outs)
    index = {x: i for i, x in enumerate(gt.query_ids)}
    true = set(zip(gt.positive_queries, gt.positive_references))
    got = out.to_pydict()
    unknown = [-1 - (int(h) % 2**62) for h in hashes]  # Spark's pmod
    assert got["query_index"] == [index.get(x, u) for x, u in zip(q, unknown)]
    assert got["label"] == [(x, y) in true for x, y in zip(q, r)]
    assert got["pair"] == list(range(n))
