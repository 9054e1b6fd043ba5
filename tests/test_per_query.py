"""Per-query results (--per-query, queries.csv): a hand-computed case, and every engine and
plan equal to the brute-force oracle (matching/oracle/per_query.py) on generated submissions
with ties, -0.0, distractors and unknown queries; the contribution column sums to μAP."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disc21spark.commands import main
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.per_query import COLUMNS
from tests import helpers
from tests.helpers import (
    as_records,
    assert_equal_to_oracle,
    gt_csv,
    make_gt,
    random_submission,
    score_file,
)


def hand_case() -> tuple[GroundTruth, pd.DataFrame]:
    """Q0 → R0, Q1 → R1, Q3 → R3 (no predictions), Q2 a distractor, QX unknown. In the
    pessimistic order: QXR0 (0.99, wrong), Q0R5 (0.95, wrong), Q0R0 (0.9, true: precision
    1/3), Q1R7 (0.8, wrong, first of the tie), Q1R1 (0.8, true: 2/5), Q2R2 (0.7).
    μAP = (1/3 + 2/5) / 3 = 11/45."""
    return helpers.hand_case(
        ["Q0", "Q1", "Q2", "Q3"],
        {"Q0": "R0", "Q1": "R1", "Q3": "R3"},
        [
            ("Q1", "R1", 0.8),
            ("Q0", "R0", 0.9),
            ("Q2", "R2", 0.7),
            ("Q1", "R7", 0.8),
            ("Q0", "R5", 0.95),
            ("QX", "R0", 0.99),  # a query the ground truth lacks: in no row, yet ranked
        ],
    )


def score_in_process(tmp_path: Path, frame: pd.DataFrame, gt: GroundTruth):
    frame.to_csv(tmp_path / "p.csv", index=False)
    return score_file(str(tmp_path / "p.csv"), "auto", gt, 0, 50, per_query=True)


def test_hand_computed_case(tmp_path):
    gt, frame = hand_case()
    metrics = score_in_process(tmp_path, frame, gt)
    assert metrics.micro_ap == pytest.approx(11 / 45)
    rows = {r["query_id"]: r for r in as_records(metrics.queries)}
    assert rows["Q0"] == {
        "query_id": "Q0",
        "has_match": True,
        "true_pairs": 1,
        "predictions": 2,
        "found": 1,
        "rank": 2,
        "true_score": 0.9,
        "wrong_reference": "R5",
        "wrong_score": 0.95,
        "contribution": pytest.approx(1 / 9),
    }
    # the wrong reference tied with the true pair ranks above it (pessimistic ties)
    assert (rows["Q1"]["rank"], rows["Q1"]["wrong_reference"]) == (2, "R7")
    assert rows["Q1"]["contribution"] == pytest.approx(2 / 5 / 3)
    assert rows["Q2"] == {
        "query_id": "Q2",
        "has_match": False,
        "true_pairs": 0,
        "predictions": 1,
        "found": 0,
        "rank": None,
        "true_score": None,
        "wrong_reference": "R2",
        "wrong_score": 0.7,
        "contribution": 0.0,
    }
    assert rows["Q3"]["predictions"] == 0 and rows["Q3"]["wrong_reference"] is None
    assert list(rows) == ["Q0", "Q1", "Q2", "Q3"]
    assert math.fsum(metrics.queries["contribution"]) == pytest.approx(metrics.micro_ap)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    n_scores=st.sampled_from([1, 2, 5, 1000]),
    batch_bytes=st.sampled_from([None, 64]),
)
def test_in_process_equals_the_oracle(tmp_path_factory, seed, n, n_scores, batch_bytes):
    """The in-process engine, in one batch or in batches of a few rows (the best wrong
    reference carried across batches), equal to brute force; the contributions add up to
    μAP."""
    rng = np.random.default_rng(seed)
    gt = make_gt(30, 18)
    frame = random_submission(rng, gt, n, n_scores)
    frame.loc[frame["score"] == 0.0, "score"] = -0.0
    path = tmp_path_factory.mktemp("q") / "p.csv"
    frame.to_csv(path, index=False)
    metrics = score_file(str(path), "auto", gt, 0, 50, per_query=True, batch_bytes=batch_bytes)
    assert_equal_to_oracle(metrics.queries, frame, gt)
    assert math.fsum(metrics.queries["contribution"]) == pytest.approx(
        metrics.micro_ap, rel=1e-12, abs=1e-15
    )


@pytest.mark.parametrize("partitions", [1, 7])
def test_the_distributed_plan_equals_the_oracle(spark, partitions):
    from disc21spark.matching.spark import labels
    from disc21spark.matching.spark.score import Scoring, score

    rng = np.random.default_rng(partitions)
    gt = make_gt(30, 18)
    for _ in range(2):
        frame = random_submission(rng, gt, 300, 5)
        frame.loc[frame["score"] == 0.0, "score"] = -0.0
        pairs = spark.createDataFrame(frame, "query_id string, reference_id string, score double")
        pairs = pairs.repartition(partitions).withColumn(labels.SUBMISSION, labels.F.lit(0))
        found = score(spark, pairs, [0], Scoring(gt, 50, per_query=True)).metrics[0]
        assert_equal_to_oracle(found.queries, frame, gt)


def test_the_command_line_writes_queries_on_both_engines(tmp_path, capsys):
    gt, frame = hand_case()
    truth = gt_csv(tmp_path / "gt.csv", gt)
    frame.to_csv(tmp_path / "p.csv", index=False)
    tables = {}
    for engine in ("local", "spark"):
        out = tmp_path / engine
        args = ["evaluate", "--engine", engine, "--ground-truth", str(truth)]
        args += ["--predictions", str(tmp_path / "p.csv"), "--output", str(out), "--per-query"]
        assert main([*args, "--resamples", "0", "--quiet"]) == 0
        csv = pd.read_csv(out / "queries.csv", float_precision="round_trip")
        parquet = pd.read_parquet(out / "queries.parquet")
        assert list(csv.columns) == list(parquet.columns) == list(COLUMNS)
        assert_equal_to_oracle(parquet, frame, gt)
        assert csv["contribution"].tolist() == parquet["contribution"].tolist()  # to the bit
        tables[engine] = parquet
    pd.testing.assert_frame_equal(tables["local"], tables["spark"])


def test_per_query_is_refused_for_the_descriptor_track(tmp_path, capsys):
    args = ["evaluate", "--ground-truth", "gt.csv", "--per-query", "--quiet"]
    with pytest.raises(SystemExit) as stopped:
        main(
            [
                *args,
                "--query-descriptors",
                "q.h5",
                "--reference-descriptors",
                "r.h5",
                "--output",
                "o",
            ]
        )
    assert stopped.value.code == 2
    assert "--per-query is for the matching track" in capsys.readouterr().err


def test_the_api_returns_the_table(tmp_path):
    from disc21spark import evaluate

    gt, frame = hand_case()
    truth = gt_csv(tmp_path / "gt.csv", gt)
    metrics = evaluate(str(truth), frame, per_query=True, resamples=0)
    assert_equal_to_oracle(metrics.queries, frame, gt)
    assert evaluate(str(truth), frame, resamples=0).queries is None
