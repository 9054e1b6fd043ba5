"""Candidate-budget curves of the descriptor track: the cuts of one search equal a search
at each budget, the Spark plan equals the numpy specification bit for bit, a tiny case
computed by hand, the files, the API's table and the one-line errors."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from disc21spark import commands
from disc21spark.api import evaluate_descriptors
from disc21spark.core.errors import InputError
from disc21spark.core.fs import SparkFiles
from disc21spark.core.phases import Phases
from disc21spark.descriptors import job as D
from disc21spark.descriptors import spec as S
from disc21spark.descriptors.budgets import spec as B
from disc21spark.descriptors.budgets.table import BudgetTable
from disc21spark.matching.model import GroundTruth
from disc21spark.resolve import resolve
from disc21spark.testing.synth import write_hdf5_descriptors
from tests.conftest import DESCRIPTORS, MINIMAL

# ------------------------------------------------------------------ by hand (no JVM)

GT = GroundTruth(
    "gt",
    np.array(["Q1", "Q2", "Q3"], dtype=object),  # Q3: a distractor
    np.array(["Q1", "Q2"], dtype=object),
    np.array(["R1", "R2"], dtype=object),
)
# four pairs tie at -2: the cut takes them by query id, then reference id
HAND = pd.DataFrame(
    {
        "query_id": ["Q1", "Q1", "Q2", "Q2", "Q3", "Q2"],
        "reference_id": ["R1", "R2", "R2", "R3", "R1", "R1"],
        "score": [-1.0, -2.0, -2.0, -2.0, -3.0, -4.0],
        "true": [True, False, True, False, False, False],
    }
)


def hand_metrics(kind: str, budgets: list[int]):
    q, r = HAND.query_id.to_numpy(object), HAND.reference_id.to_numpy(object)
    order = S.reference_order(r.astype(str))
    return B.budget_metrics(kind, budgets, q, r, order, HAND.score.to_numpy(), GT)


def test_global_budgets_by_hand():
    """N=2 keeps (Q1,R2) of the pairs tied at -2 (Q1 < Q2); N=3 adds (Q2,R2) (R2 < R3),
    a true pair at position 3: μAP = ½·1 + ½·⅔; N=4 adds (Q2,R3), a false pair tied with
    it that the pessimistic order puts first: ½·1 + ½·2/4."""
    rows = hand_metrics("max_results", [1, 2, 3, 4, 6])
    assert [m.micro_ap for m in rows] == [0.5, 0.5, 0.5 + 0.5 * 2 / 3, 0.75, 0.75]
    assert [m.n_predictions for m in rows] == [1, 2, 3, 4, 6]
    assert [m.n_true_positives for m in rows] == [1, 1, 2, 2, 2]
    # Q2's true pair is first of its query only while (Q2,R3), tied with it, is not kept
    assert [m.recall_at_rank1 for m in rows] == [0.5, 0.5, 1.0, 0.5, 0.5]
    assert [m.recall_at_p90 for m in rows] == [0.5] * 5


def test_knn_budgets_by_hand():
    """k=1: Q1→R1, Q2→R2 (tied with R3, the lower id wins), Q3→R1: both true pairs
    first, μAP 1; k=2 adds (Q1,R2) and (Q2,R3), both false and tied at -2 with (Q2,R2)."""
    rows = hand_metrics("knn", [1, 2, 3])
    assert [m.micro_ap for m in rows] == [1.0, 0.75, 0.75]
    assert [m.n_predictions for m in rows] == [3, 5, 6]
    assert [m.recall_at_rank1 for m in rows] == [1.0, 0.5, 0.5]
    assert [m.recall_at_p90 for m in rows] == [1.0, 0.5, 0.5]


def test_ranks_in_query():
    q, r = HAND.query_id.to_numpy(object), HAND.reference_id.to_numpy(object)
    ranks = B.ranks_in_query(q, S.reference_order(r.astype(str)), HAND.score.to_numpy())
    assert ranks.tolist() == [1, 2, 1, 2, 1, 3]
    assert B.ranks_in_query(q[:0], np.zeros(0, np.int64), np.zeros(0)).tolist() == []


def test_the_table_as_csv_json_dataframe_and_plot(tmp_path):
    rows = hand_metrics("max_results", [1, 3, 4])
    table = BudgetTable(B.Budgets("max_results", (1, 3, 4), 2), tuple(rows))
    table.write_csv(tmp_path / "budgets.csv")
    back = pd.read_csv(tmp_path / "budgets.csv", float_precision="round_trip")
    frame = table.to_pandas()
    assert back.columns.tolist() == frame.columns.tolist() == ["budget", *rows[0].to_dict()]
    assert back.micro_ap.tolist() == frame.micro_ap.tolist() == [0.5, 0.5 + 0.5 * 2 / 3, 0.75]
    block = table.to_dict()
    assert (block["kind"], block["searched"]) == ("max_results", 4)
    assert [r["n_predictions"] for r in block["rows"]] == [1, 3, 4]
    assert "query id, then reference id" in block["ties"]
    table.write_plot(tmp_path / "budgets.png", "hand")
    with Image.open(tmp_path / "budgets.png") as png:
        assert png.size == (770, 495)
    assert [line.split()[0] for line in table.lines()[2:]] == ["1", "3", "4"]


# ---------------------------------------- the cut of a cut is the cut (no JVM)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    nq=st.integers(1, 12),
    nb=st.integers(1, 15),
    levels=st.integers(1, 6),
    small=st.integers(1, 60),
    extra=st.integers(0, 60),
)
def test_a_budget_cut_of_a_larger_search_is_the_search_at_that_budget(
    seed, nq, nb, levels, small, extra
):
    """Over all pairs of coarse (often tied) scores: cutting the best M pairs to N gives
    the best N pairs, and cutting each query's K best to k its k best."""
    rng = np.random.default_rng(seed)
    full = rng.integers(0, levels, (nq, nb)).astype(np.float64)
    qids = np.array([f"Q{i}" for i in rng.permutation(nq)], dtype=object)
    ranks = rng.permutation(nb)
    qi, ri = (a.ravel() for a in np.meshgrid(np.arange(nq), np.arange(nb), indexing="ij"))
    scores, q, rr = full[qi, ri], qids[qi], ranks[ri]
    large = small + extra
    searched = S.cut_ties(scores, q, rr, large)
    again = searched[B.cut("max_results", small, q[searched], rr[searched], scores[searched])]
    assert again.tolist() == S.cut_ties(scores, q, rr, small).tolist()
    k, big_k = 1 + small % nb, 1 + (small + extra) % nb
    k, big_k = min(k, big_k), max(k, big_k)
    searched = B.cut("knn", big_k, q, rr, scores)
    again = searched[B.cut("knn", k, q[searched], rr[searched], scores[searched])]
    assert again.tolist() == B.cut("knn", k, q, rr, scores).tolist()
    assert np.bincount(qi[again], minlength=nq).tolist() == [k] * nq


# ------------------------------------------------------------------- on Spark


@pytest.fixture(scope="module")
def vectors(tmp_path_factory):
    """Coarse 4-d vectors: many tied scores within and across queries."""
    root = tmp_path_factory.mktemp("budgets")
    rng = np.random.default_rng(24)
    nq, nb, d = 60, 80, 4
    xb = np.round(rng.standard_normal((nb, d)) * 1.5).astype(np.float32)
    xq = np.round(rng.standard_normal((nq, d)) * 1.5).astype(np.float32)
    xq[:20] = xb[:20] + np.round(rng.standard_normal((20, d)) * 0.4)
    qids = np.array([f"Q{i:03d}" for i in rng.permutation(nq)], dtype=object)
    rids = np.array([f"R{i:03d}" for i in rng.permutation(nb)], dtype=object)
    write_hdf5_descriptors(root / "q.h5", qids, xq)
    write_hdf5_descriptors(root / "r.h5", rids, xb)
    gt = pd.DataFrame({"query_id": qids, "reference_id": [""] * nq})
    gt.loc[:19, "reference_id"] = rids[:20]
    gt.to_csv(root / "gt.csv", index=False)
    return root


def job_for(root, **kw) -> D.DescriptorJob:
    base = D.DescriptorJob(
        str(root / "gt.csv"), [str(root / "q.h5")], [str(root / "r.h5")], None, query_partitions=3
    )
    return replace(base, **kw)


def searched_and_scored(spark, job: D.DescriptorJob):
    """The job's search and scores, with its searched pairs as numpy arrays."""
    gt = D.ground_truth_phase(SparkFiles(spark), resolve(job.ground_truth), Phases())
    outcome = D.search_pairs(spark, job, Phases())
    try:
        scores = D.score_pairs(spark, job, gt, outcome, Phases())
        rows = outcome.searched.toPandas()
    finally:
        outcome.release()
    return gt, scores, rows


def spec_rows(kind: str, budgets, rows: pd.DataFrame, gt: GroundTruth):
    q, r = rows.query_id.to_numpy(object), rows.reference_id.to_numpy(object)
    return B.budget_metrics(kind, budgets, q, r, rows.rrank.to_numpy(), rows.score.to_numpy(), gt)


def same(a, b) -> None:
    """Every figure and every curve point, to the last bit."""
    assert a.to_dict() == b.to_dict()
    for field in ("precision", "recall", "threshold"):
        assert getattr(a.curve, field).tobytes() == getattr(b.curve, field).tobytes()


@pytest.mark.parametrize(
    "case",
    [
        dict(max_results=200, budgets=[7, 50, 300, 4800]),  # the search raised to 4,800 (all)
        dict(knn=3, knn_budgets=[1, 2, 5], broadcast_limit=400),  # 5 searched, 4 shards
    ],
    ids=["global", "knn-sharded"],
)
def test_spark_budgets_equal_the_specification_and_searches_at_each_budget(spark, vectors, case):
    job = job_for(vectors, **case)
    request = job.budget_request
    gt, scores, rows = searched_and_scored(spark, job)
    assert len(rows) == min(request.search * (60 if job.knn else 1), 60 * 80)
    table = scores.budgets
    assert table.budgets.values == tuple(case.get("budgets") or case["knn_budgets"])
    for got, want in zip(table.rows, spec_rows(request.kind, request.values, rows, gt)):
        same(got, want)
    (main,) = spec_rows(request.kind, [request.main], rows, gt)
    same(scores.metrics, main)
    # the smallest budget's row, and the main figures, as separate searches give them
    field = "knn" if job.knn else "max_results"
    for budget, got in ((request.values[0], table.rows[0]), (request.main, scores.metrics)):
        alone = replace(job, budgets=[], knn_budgets=[], **{field: budget})
        _, separate, _ = searched_and_scored(spark, alone)
        assert separate.budgets is None
        same(got, separate.metrics)


def test_budget_files_and_the_api_table(spark, vectors, tmp_path):
    out = tmp_path / "out"
    job = job_for(vectors, output=str(out), budgets=[10, 100, 1000], write_predictions=True)
    scores = D.evaluate(spark, job)
    doc = json.loads((out / "metrics.json").read_text())
    block = doc["budgets"]
    assert block["kind"] == "max_results" and block["searched"] == job.max_results
    assert [r["budget"] for r in block["rows"]] == [10, 100, 1000]
    assert doc["micro_ap"] == scores.metrics.micro_ap
    assert doc["run"]["budgets"] == [10, 100, 1000]
    csv = pd.read_csv(out / "budgets.csv", float_precision="round_trip")
    assert csv.budget.tolist() == [10, 100, 1000]
    assert csv.micro_ap.tolist() == [r["micro_ap"] for r in block["rows"]]
    assert csv.n_predictions.tolist() == [10, 100, 1000]
    with Image.open(out / "budgets.png") as png:
        assert png.size[0] > 400
    # predictions.csv holds the job's own budget, not the larger search
    assert len(pd.read_csv(out / "predictions.csv")) == 60 * 80
    result = evaluate_descriptors(
        vectors / "gt.csv",
        vectors / "q.h5",
        vectors / "r.h5",
        knn=2,
        knn_budgets=[1, 4],
        engine=spark,
        query_partitions=2,
    )
    assert result.budgets.budget.tolist() == [1, 4]
    assert result.budgets.n_predictions.tolist() == [60, 240]
    assert result.metrics.n_predictions == 120
    assert list(result.budgets.columns[:3]) == ["budget", "micro_ap", "recall_at_p90"]
    assert (
        evaluate_descriptors(
            vectors / "gt.csv", vectors / "q.h5", vectors / "r.h5", knn=2, engine=spark
        ).budgets
        is None
    )


# --------------------------------------------------------------- bad values (no JVM)

EVALUATE_DESCRIPTORS = [*MINIMAL["evaluate"][:2], *DESCRIPTORS, "--output", "o"]
BAD = [
    (["--budgets", "0"], "--budgets must be whole numbers ≥ 1 in increasing order, "
     "such as 10000,50000,100000 (got '0')"),
    (["--budgets=-5,10"], "--budgets must be whole numbers ≥ 1 in increasing order, "
     "such as 10000,50000,100000 (got '-5,10')"),
    (["--budgets", "500,100"], "--budgets must be whole numbers ≥ 1 in increasing order, "
     "such as 10000,50000,100000 (got '500,100')"),
    (["--budgets", ","], "--budgets must be whole numbers ≥ 1 in increasing order, "
     "such as 10000,50000,100000 (got '')"),
    (["--budgets", "1e4"], "argument --budgets: '1e4' is not a list such as 10000,50000,100000"),
    (["--knn-budgets", "1.5"], "argument --knn-budgets: '1.5' is not a list such as 1,5,10"),
    (["--knn-budgets", "1,5"], "--knn-budgets cuts the kNN search: give --knn K as well"),
    (["--knn", "5", "--budgets", "10"],
     "--budgets cuts the global search (--max-results); with --knn give --knn-budgets"),
    (["--knn", "5", "--knn-budgets", "5,5"], "--knn-budgets must be whole numbers ≥ 1 in "
     "increasing order, such as 1,5,10 (got '5,5')"),
]  # fmt: skip


@pytest.mark.parametrize(
    "options,message", BAD, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_bad_budgets_are_one_line_usage_errors(capsys, options, message):
    with pytest.raises(SystemExit) as exit_info:
        commands.parse(["evaluate", *EVALUATE_DESCRIPTORS, *options])
    assert exit_info.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert [line.partition(": error: ")[2] for line in lines] == [message]


def test_budgets_on_the_matching_track_and_from_the_api(capsys, tmp_path):
    with pytest.raises(SystemExit):
        commands.parse(["evaluate", *MINIMAL["evaluate"], "--budgets", "10"])
    assert "--budgets is for the descriptor track" in capsys.readouterr().err
    args = commands.parse(["evaluate", *EVALUATE_DESCRIPTORS, "--budgets", "10", "20,30"])
    assert args.request.budgets == [10, 20, 30]
    gt, q = tmp_path / "gt.csv", tmp_path / "q.h5"
    gt.write_text("query_id,reference_id\nQ0,R0\n")
    write_hdf5_descriptors(q, ["Q0"], np.zeros((1, 2), np.float32))
    for bad in ([10, 2.5], [True], (0,), "10,20"):
        with pytest.raises(InputError, match="--budgets must be whole numbers ≥ 1"):
            evaluate_descriptors(gt, q, q, budgets=bad)
