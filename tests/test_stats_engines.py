"""The intervals on every engine and plan: the in-process engine, the Spark plan (any
partitioning) and both pool plans equal the numpy specification (matching/oracle/bootstrap.py) bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disc21spark import engine
from disc21spark.matching.job import MatchingJob, run
from disc21spark.matching.oracle import bootstrap as spec
from disc21spark.matching.spark import labels
from disc21spark.matching.spark.score import Scoring, score
from disc21spark.matching.stats.model import Resampling
from disc21spark.pool import job as pool_job
from tests.helpers import assert_same_uncertainty, gt_csv, make_gt, random_submission

COLUMNS = ("query_id", "reference_id", "score")


def expected(frame: pd.DataFrame, gt, r: Resampling):
    return spec.bootstrap(*(frame[c].to_numpy() for c in COLUMNS), gt, r)


def spark_uncertainty(spark, frame: pd.DataFrame, gt, r: Resampling, partitions: int):
    pairs = spark.createDataFrame(frame, "query_id string, reference_id string, score double")
    pairs = pairs.repartition(partitions).withColumn(labels.SUBMISSION, labels.F.lit(0))
    scored = score(spark, pairs, [0], Scoring(gt, 50, partitions, resampling=r))
    return scored.metrics[0].uncertainty


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1), n=st.integers(0, 300), n_scores=st.sampled_from([1, 7, 10**6])
)
def test_engines_equal_the_specification(spark, tmp_path_factory, seed, n, n_scores):
    tmp = tmp_path_factory.mktemp("stats")
    gt = make_gt(40, 25)
    frame = random_submission(np.random.default_rng(seed), gt, n, n_scores)
    r = Resampling(60, 0.9, seed % 7)
    wanted = expected(frame, gt, r)
    for partitions in (1, 3):
        assert_same_uncertainty(spark_uncertainty(spark, frame, gt, r, partitions), wanted)
    frame.to_csv(tmp / "p.csv", index=False)
    truth = gt_csv(tmp / "gt.csv", gt)
    for session, choice in ((spark, engine.DISTRIBUTED), (None, engine.LOCAL)):
        job = MatchingJob(
            str(truth),
            str(tmp / "p.csv"),
            None,
            max_results=0,
            choice=choice,
            resamples=60,
            confidence=0.9,
            seed=seed % 7,
        )
        assert_same_uncertainty(run(session, job).uncertainty, wanted)


def test_both_pool_plans_equal_the_specification_whatever_the_file_order(spark, tmp_path):
    gt = make_gt(40, 25)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    r = Resampling(80, 0.95, 11)
    frames = {}
    for i in range(3):
        frame = random_submission(np.random.default_rng(100 + i), gt, 150, 9)
        # rows written in another order than the specification reads them
        frame.iloc[::-1].to_csv(tmp_path / f"team{i}.csv", index=False)
        frames[f"team{i}"] = frame
    for plan in ("per-file", "distributed"):
        job = pool_job.PoolJob(
            str(truth),
            [str(tmp_path / "team*.csv")],
            None,
            max_results=0,
            pool_plan=plan,
            resamples=80,
            confidence=0.95,
            seed=11,
        )
        result = pool_job.run(spark, job)
        for s in result.submissions:
            assert_same_uncertainty(s.metrics.uncertainty, expected(frames[s.name], gt, r))


def test_metrics_json_holds_the_intervals(tmp_path):
    gt = make_gt(40, 25)
    frame = random_submission(np.random.default_rng(5), gt, 200, 11)
    frame.to_csv(tmp_path / "p.csv", index=False)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    job = MatchingJob(
        str(truth),
        str(tmp_path / "p.csv"),
        str(tmp_path / "out"),
        max_results=0,
        choice=engine.LOCAL,
        resamples=40,
        confidence=0.8,
        seed=2,
    )
    metrics = run(None, job)
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    low, high = doc["bootstrap"]["intervals"]["micro_ap"]
    assert low <= metrics.micro_ap <= high
    assert doc["bootstrap"]["resamples"] == 40 and doc["run"]["seed"] == 2
    assert doc["micro_ap_optimistic"] >= doc["micro_ap"]


def test_previous_run_keeps_intervals_and_tiers(spark, tmp_path):
    gt = make_gt(40, 25)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    for i in range(3):
        frame = random_submission(np.random.default_rng(200 + i), gt, 120, 13)
        frame.to_csv(tmp_path / f"team{i}.csv", index=False)
    common = dict(max_results=0, resamples=50, confidence=0.95, seed=4)
    first = pool_job.PoolJob(
        str(truth), [str(tmp_path / "team*.csv")], str(tmp_path / "a"), **common
    )
    pool_job.run(spark, first)
    again = pool_job.PoolJob(
        str(truth),
        [str(tmp_path / "team*.csv")],
        str(tmp_path / "b"),
        previous=str(tmp_path / "a"),
        **common,
    )
    result = pool_job.run(spark, again)
    assert all(s.reused for s in result.submissions)
    rows = [
        json.loads((tmp_path / d / "leaderboard.json").read_text())["submissions"] for d in "ab"
    ]
    for old, new in zip(*rows):
        assert {k: v for k, v in old.items() if k != "reused"} == {
            k: v for k, v in new.items() if k != "reused"
        }
    assert rows[0][0]["tier"] == 1 and rows[0][0]["micro_ap_low"] is not None


def test_bad_bootstrap_options_are_one_line(tmp_path):
    import subprocess
    import sys

    from tests.conftest import cli_env

    base = [
        sys.executable,
        "-m",
        "disc21spark",
        "evaluate",
        "--ground-truth",
        "gt.csv",
        "--predictions",
        "p.csv",
        "--output",
        str(tmp_path / "o"),
    ]
    for extra in (["--confidence", "1.5"], ["--resamples", "-1"], ["--resamples", "-2"]):
        proc = subprocess.run(base + extra, capture_output=True, text=True, env=cli_env())
        assert proc.returncode == 2
        assert proc.stderr.splitlines()[-1].endswith("--confidence between 0 and 1")
