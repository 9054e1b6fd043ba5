"""The Spark plan equals the numpy specification, exactly, for any partitioning."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import disc21spark as ds
from disc21spark.core.errors import InputError
from disc21spark.core.spark import spark_conf
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.oracle.spec import evaluate
from disc21spark.matching.spark import labels
from disc21spark.matching.spark import plan as scoring
from disc21spark.matching.spark.census import census
from disc21spark.matching.spark.score import PLAIN_CACHE, SMALL_ROWS, Scoring, score, static_plan
from tests.helpers import (
    assert_same,
    make_gt,
    random_submission,
    settings_at,
    tiny_inputs,
    watch_census_slices,
)


def pairs_frame(spark, frame: pd.DataFrame):
    df = spark.createDataFrame(frame, "query_id string, reference_id string, score double")
    return df.withColumn(labels.SUBMISSION, F.lit(0))


def compact_rows(spark, frame: pd.DataFrame, gt: GroundTruth):
    return labels.labelled(pairs_frame(spark, frame), gt)


def spark_metrics(
    spark, frame: pd.DataFrame, gt: GroundTruth, partitions: int, curve_points=5000, **given
):
    """The one scoring entry point, on trusted pairs (no checks), the rows counted in
    ``partitions`` partitions (and the repeat check's shuffle in as many); ``given``:
    more of ``Scoring``'s fields."""
    scoring = Scoring(gt, curve_points, partitions, **given)
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
    # a bound on the rows known (the rows, or the most a small input has): the census's
    # slices from it, and a small input's static plan (1 or 2 shuffle partitions)
    bound=st.sampled_from(["none", "rows", "small"]),
)
# every partitioning at least once, on 400 pairs with many ties (each one equal to the
# specification is all of them equal to each other; a Spark scoring costs seconds here)
@example(seed=7, n=400, n_scores=3, partitions=1, bound="none")
@example(seed=7, n=400, n_scores=3, partitions=2, bound="rows")
@example(seed=8, n=400, n_scores=50, partitions=7, bound="small")
@example(seed=9, n=400, n_scores=1, partitions=50, bound="none")
@example(seed=10, n=37, n_scores=10**6, partitions=50, bound="rows")
def test_spark_equals_specification_for_1_2_7_50_partitions(
    spark, seed, n, n_scores, partitions, bound
):
    rng = np.random.default_rng(seed)
    gt = make_gt(40, 25)
    frame = random_submission(rng, gt, n, n_scores)
    rows_at_most = {"none": None, "rows": n, "small": SMALL_ROWS}[bound]
    found = spark_metrics(spark, frame, gt, partitions, rows_at_most=rows_at_most)
    assert_same(found, spec_metrics(frame, gt))


def test_a_small_input_is_scored_on_a_static_plan_and_the_session_keeps_its_own(
    spark, monkeypatch, tmp_path
):
    """A bound on the rows within SMALL_ROWS, all submissions together, turns adaptive
    execution off, a shuffle partition per 4M rows of it; a larger or unknown bound changes
    nothing. Every Spark action of a small file's run on Spark (checks, counts per query,
    intervals) runs under those settings, and the caller's session has its own back."""
    off, parts = "spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions"
    assert static_plan(None, 1) == {} and static_plan(SMALL_ROWS, 2) == {}
    assert static_plan(400, 3) == {off: "false", parts: "1"}
    assert static_plan(SMALL_ROWS, 1)[parts] == "2" and static_plan(4_000_001, 1)[parts] == "2"
    assert static_plan(4_000_000, 2) == {off: "false", parts: "2"}
    gt, predictions = tiny_inputs(tmp_path)
    seen = settings_at(monkeypatch, spark, "collect", off, parts)
    with spark_conf(spark, {off: "true", parts: "13"}):
        found = ds.evaluate(gt, predictions, engine=spark)
        assert spark.conf.getAll.get(off) == "true" and spark.conf.getAll.get(parts) == "13"
    assert seen and set(seen) == {("false", "1")}
    assert found.to_dict() == ds.evaluate(gt, predictions, engine="local").to_dict()


@pytest.mark.parametrize("rows_at_most", [None, 1000])
def test_the_rows_are_cached_plain_and_the_session_keeps_its_setting(
    spark, monkeypatch, rows_at_most
):
    """The scoring's cache of the rows is defined and filled (the scoring's first Spark
    action: the most rows of a query, or the census when a bound on the rows spares that
    job) with Spark's column encodings off: they cost a fifth of the fill and saved no
    disk. Spark reads the setting at one or the other, depending on the session. The
    caller's own setting is back afterwards, and the figures are the specification's."""
    ((key, plain),) = PLAIN_CACHE.items()
    persisted = settings_at(monkeypatch, spark, "persist", key)
    actions = settings_at(monkeypatch, spark, "collect", key)
    _, counted = watch_census_slices(monkeypatch)
    gt = make_gt(40, 25)
    frame = random_submission(np.random.default_rng(2), gt, 200, 10)
    with spark_conf(spark, {key: "true"}):
        metrics = spark_metrics(spark, frame, gt, 2, rows_at_most=rows_at_most)
        # set as the caller set it, not merely Spark's default
        assert spark.conf.getAll.get(key) == "true"
    # without resamples, the rows' cache is the scoring's only one; its first action fills it
    assert plain == "false" and persisted == [(plain,)] and actions[0] == (plain,)
    assert len(counted) == (rows_at_most is None)
    assert_same(metrics, spec_metrics(frame, gt))


def counted_rows(rows):
    """The counting job of ``rows`` as the plan runs it, against the census's true pairs."""
    truths = {s: c.truth for s, c in census(rows).items()}
    grid = scoring.Grid.of(truths)
    return scoring.counted(rows, grid, truths), truths, grid


def test_all_equal_scores_count_against_one_true_score(spark):
    gt = make_gt(200, 100)
    rng = np.random.default_rng(3)
    frame = random_submission(rng, gt, 3000, 1)
    frame["score"] = 0.25
    expected = spec_metrics(frame, gt)
    assert expected.micro_ap < 0.1  # the pessimistic order: a constant score earns little
    assert_same(spark_metrics(spark, frame, gt, 7), expected)
    rows = compact_rows(spark, frame, gt).repartition(3)
    counts, truths, grid = counted_rows(rows)
    misses = [r for r in counts.collect() if r["kind"] == scoring.MISSES]
    # every true pair ties with every miss: one bucket, the one holding 0.25 only
    assert len(truths[0].levels) == 1 and len(misses) == 1
    assert grid.splits[misses[0]["at"]] == 0.25 < grid.splits[misses[0]["at"] + 1]
    n_true = int(
        frame.merge(
            pd.DataFrame({"query_id": gt.positive_queries, "reference_id": gt.positive_references})
        ).shape[0]
    )
    assert misses[0]["n"] == len(frame) - n_true == len(frame) - len(truths[0])


def test_positions_are_counted_in_the_jvm_without_shuffling_the_rows(spark):
    gt = make_gt(40, 25)
    frame = random_submission(np.random.default_rng(1), gt, 300, 10)
    rows = compact_rows(spark, frame, gt).repartition(5)
    counts, truths, grid = counted_rows(rows)
    plan = counts._jdf.queryExecution().executedPlan().toString()
    assert "Window" not in plan and "rangepartitioning" not in plan
    # no row crosses into Python: no Python UDF, no mapInArrow, no Arrow evaluation
    assert "Python" not in plan and "Arrow" not in plan
    # what the aggregations shuffle is their partial counts (the other exchanges are the
    # test's own repartition(5), once per branch of the job): the misses per (submission,
    # bucket), per (submission, query, bucket), and the latter summed per true pair
    lines = [line.strip(" :+-") for line in plan.splitlines()]
    hashed = [i for i, line in enumerate(lines) if line.startswith("Exchange hashpartitioning")]
    assert len(hashed) == 3
    assert all(re.search(r"functions=\[partial_(count|sum)\(", lines[i + 1]) for i in hashed)
    # the driver receives counts: buckets and true pairs, never rows
    assert counts.count() <= len(grid.splits) + len(truths[0])


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


@pytest.mark.parametrize("keep", [False, True])
def test_counts_of_a_pool_mixed_over_partitions_equal_the_specification(spark, keep):
    """Partitions that mix submissions (a one-table pool) count each submission's sorted
    positions, ranks and optimistic buckets, with many ties and -0.0 beside 0.0; the
    same when the counts per query are kept for the bootstrap (``keep``)."""
    from disc21spark.matching import positions
    from disc21spark.matching.oracle.spec import pessimistic_order, true_pair_ranks
    from disc21spark.matching.stats.weighted import levels_of

    rng = np.random.default_rng(1)
    n = 3000
    sub = rng.integers(0, 4, n).astype(np.int32)
    query, label = rng.integers(0, 30, n), rng.random(n) < 0.2
    score = np.round(rng.random(n), 2) * rng.choice([-1.0, 1.0], n)  # ties, -0.0 and 0.0
    frame = pd.DataFrame(
        {
            "submission": sub,
            "query_index": query,
            "label": label,
            "score": score,
            "pair": np.arange(n),
        }
    )
    rows = spark.createDataFrame(frame).repartition(3)
    censuses = census(rows)
    kept = scoring.QueryBuckets.of(rows, censuses) if keep else None
    try:
        found = scoring.counts_of(rows, censuses, kept)
    finally:  # the test session goes on: leave no cache behind
        if kept is not None:
            kept.release()
    totals, optimistic = found.totals, found.optimistic
    for k, c in censuses.items():
        mine = sub == k
        s = score[mine] + 0.0
        order = pessimistic_order(s, label[mine])
        pos, _ = positions.positions(c.truth, totals[k])
        np.testing.assert_array_equal(pos, np.flatnonzero(label[mine][order]) + 1)
        expected = np.sort(true_pair_ranks(query[mine], s, label[mine]))
        np.testing.assert_array_equal(np.sort(positions.ranks(totals[k])), expected)
        levels = levels_of(s[label[mine]])
        # the optimistic bucket: the first level a non-match is strictly ahead of
        ahead = np.searchsorted(-levels, -s[~label[mine]], "right")
        by_hand = np.bincount(ahead, minlength=len(levels) + 1)
        np.testing.assert_array_equal(optimistic[k], by_hand[: len(levels)])
        assert totals[k].n == mine.sum() and totals[k].bottom == s.min()


def two_submissions(spark, seeds: tuple[int, int]) -> tuple[list, object, dict]:
    """Two random submissions (300 pairs each, drawn from ``seeds``) as compact rows in 3
    partitions: (their frames, the rows, their censuses)."""
    gt = make_gt(40, 25)
    frames = [random_submission(np.random.default_rng(s), gt, 300, 20) for s in seeds]
    for k, frame in enumerate(frames):
        frame["submission"] = k
    schema = "query_id string, reference_id string, score double, submission int"
    rows = labels.labelled(spark.createDataFrame(pd.concat(frames), schema), gt).repartition(3)
    return frames, rows, census(rows)


def test_the_counts_kept_per_query_add_up_to_the_counts_on_local_disk(spark):
    """With intervals, the count job also keeps the non-matches per (submission, query,
    bucket) on local disk for the bootstrap, which then reads no row again: the same
    counts as without, and the kept ones add up to them; released, they are gone."""
    frames, rows, censuses = two_submissions(spark, (1, 2))
    kept = scoring.QueryBuckets.of(rows, censuses)
    try:
        plain, found = scoring.counts_of(rows, censuses), scoring.counts_of(rows, censuses, kept)
        counts = kept.frame.toPandas()
        level = kept.frame.storageLevel
    finally:  # the test session goes on: leave no cache behind
        kept.release()
    assert not kept.frame.is_cached
    assert set(censuses) == {0, 1}
    for k in censuses:
        a, b = found.totals[k], plain.totals[k]
        assert (a.n, a.bottom) == (b.n, b.bottom)
        np.testing.assert_array_equal(a.misses_ge, b.misses_ge)
        np.testing.assert_array_equal(a.ranks_ge, b.ranks_ge)
        np.testing.assert_array_equal(found.optimistic[k], plain.optimistic[k])
    assert level.useDisk and not level.useMemory
    assert list(counts.columns) == ["submission", "query_index", "bucket", "n"]
    assert not counts.duplicated(["submission", "query_index", "bucket"]).any()
    for k, frame in enumerate(frames):
        mine = counts[counts["submission"] == k]
        assert mine["n"].sum() == len(frame) - len(censuses[k].truth)
        # a query's non-matches, bucket by bucket, as the grid puts each score
        splits = kept.grid.splits
        assert (mine["bucket"] >= 0).all() and (mine["bucket"] < len(splits) - 1).all()


def test_a_small_inputs_counts_per_query_are_collected_and_summed_on_the_driver(spark):
    """A small input's counts per query: collected by the counting job (not persisted),
    the same rows as the persisted ones, and the sums taken from them on the driver
    (``positions.ranks_ge`` weighed) equal the plan's in the JVM; released, they are gone."""
    _, rows, censuses = two_submissions(spark, (3, 4))
    kept = scoring.QueryBuckets.of(rows, censuses, on_driver=True)
    persisted = scoring.QueryBuckets.of(rows, censuses)
    try:
        plain, found = scoring.counts_of(rows, censuses), scoring.counts_of(rows, censuses, kept)
        collected, on_disk = kept.table.to_pandas(), persisted.frame.toPandas()
    finally:  # the test session goes on: leave no cache behind
        kept.release()
        persisted.release()
    assert not kept.frame.is_cached and kept.table is None
    keys = ["submission", "query_index", "bucket"]
    assert collected.sort_values(keys, ignore_index=True).equals(
        on_disk.sort_values(keys, ignore_index=True)
    )
    for k in censuses:
        a, b = found.totals[k], plain.totals[k]
        assert (a.n, a.bottom) == (b.n, b.bottom)
        assert a.misses_ge.dtype == a.ranks_ge.dtype == np.int64
        np.testing.assert_array_equal(a.misses_ge, b.misses_ge)
        np.testing.assert_array_equal(a.ranks_ge, b.ranks_ge)
        np.testing.assert_array_equal(found.optimistic[k], plain.optimistic[k])


def test_labels_are_the_ground_truths(spark):
    """The labelling: a query's index, or the unknown key of its hash, and a true pair
    exactly when the ground truth lists it; null ids are unknown; -0.0 becomes 0.0."""
    gt = make_gt(30, 12)
    rng = np.random.default_rng(4)
    n = 500
    q = [f"Q{i:03d}" for i in rng.integers(0, 35, n)]
    r = [f"R{i:03d}" for i in rng.integers(0, 15, n)]
    q[3], r[4] = None, None
    score = rng.random(n)
    score[5] = -0.0
    frame = pd.DataFrame({"query_id": q, "reference_id": r, "score": score})
    got = compact_rows(spark, frame, gt).toPandas()
    index = {x: i for i, x in enumerate(gt.query_ids)}
    true = set(zip(gt.positive_queries, gt.positive_references))
    hashes = spark.createDataFrame(frame[["query_id"]], "query_id string").select(
        F.xxhash64("query_id").alias("h")
    )
    unknown = [-1 - (int(h) % 2**62) for h in hashes.toPandas()["h"]]  # Spark's pmod
    assert got["query_index"].tolist() == [index.get(x, u) for x, u in zip(q, unknown)]
    assert got["label"].tolist() == [(x, y) in true for x, y in zip(q, r)]
    assert np.signbit(got["score"]).sum() == 0 and got["score"][5] == 0.0


def test_the_plans_sql_text_parses_where_ansi_reserved_words_are_enforced(spark, tmp_path):
    """The distributed plan's SQL text quotes a column named by an ANSI SQL reserved word
    (``order``) or by a literal's word (``true``): a session that enforces reserved words
    (``spark.sql.ansi.enforceReservedKeywords``) scores a file as any other, intervals
    and a bad row's message included."""
    gt, predictions = tiny_inputs(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text(Path(predictions).read_text() + "Q001,R999,0.5x\n")
    wanted = ds.evaluate(gt, predictions, engine="local").to_dict()
    with pytest.raises(InputError) as here:
        ds.evaluate(gt, str(bad), engine="local")
    strict = {"spark.sql.ansi.enabled": "true", "spark.sql.ansi.enforceReservedKeywords": "true"}
    with spark_conf(spark, strict):
        assert ds.evaluate(gt, predictions, engine=spark).to_dict() == wanted
        with pytest.raises(InputError) as there:
            ds.evaluate(gt, str(bad), engine=spark)
    assert str(there.value) == str(here.value)


@pytest.mark.parametrize("driver_rows", [0, 10**6])
def test_a_small_inputs_counts_reach_the_driver_only_within_driver_rows(
    spark, monkeypatch, driver_rows
):
    """A small input (a bound within SMALL_ROWS) has its counts per query collected and
    weighed on the driver when the census counted at most ``DRIVER_ROWS`` rows; past
    it, they are persisted and weighed on the executors. The intervals are the
    specification's either way."""
    from disc21spark.matching.oracle import bootstrap as spec
    from disc21spark.matching.spark import bootstrap
    from disc21spark.matching.spark import score as score_module
    from disc21spark.matching.stats.model import Resampling
    from tests.helpers import assert_same_uncertainty

    monkeypatch.setattr(score_module, "DRIVER_ROWS", driver_rows)
    ways = []
    for way in ("_weighed_on_driver", "_weighed_on_executors"):
        weigh = getattr(bootstrap, way)
        monkeypatch.setattr(bootstrap, way, lambda *a, w=weigh, n=way: ways.append(n) or w(*a))
    gt = make_gt(40, 25)
    frame = random_submission(np.random.default_rng(11), gt, 300, 7)
    r = Resampling(30, 0.9, 2)
    found = spark_metrics(spark, frame, gt, 2, resampling=r, rows_at_most=len(frame))
    columns = [frame[c].to_numpy() for c in ("query_id", "reference_id", "score")]
    assert_same(found, spec_metrics(frame, gt))
    assert_same_uncertainty(found.uncertainty, spec.bootstrap(*columns, gt, r))
    assert ways == ["_weighed_on_driver" if driver_rows else "_weighed_on_executors"]
