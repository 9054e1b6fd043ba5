"""A pool's per-query results (--per-query on a pool): each submission's table equal to
it scored alone and to the brute-force oracle, on both pool plans; the queries every
submission misses and the queries separating neighbours equal to a direct computation
from the tables, and to a case computed by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from disc21spark import evaluate_pool
from disc21spark.commands import main
from disc21spark.pool.queries import MISSED_COLUMNS, SEPARATING_COLUMNS
from tests import helpers
from tests.helpers import assert_equal_to_oracle, gt_csv, make_gt, random_submission


def brute_missed(tables: dict[str, pd.DataFrame]) -> list[tuple]:
    """(query_id, true_pairs, predicted_by) of each query with a match none found."""
    first = next(iter(tables.values()))
    out = []
    for i, q in enumerate(first["query_id"]):
        if first["has_match"][i] and all(t["found"][i] == 0 for t in tables.values()):
            by = sum(t["predictions"][i] > 0 for t in tables.values())
            out.append((q, int(first["true_pairs"][i]), int(by)))
    return out


def brute_separating(order: list[str], tables: dict[str, pd.DataFrame], top: int) -> list:
    """(place, above, below, query_id, difference) by a sort of each pair's queries."""
    out = []
    for place, (a, b) in enumerate(zip(order, order[1:]), start=1):
        ta, tb = tables[a], tables[b]
        rows = [
            (-abs(x - y), i, ta["query_id"][i], x - y)
            for i, (x, y) in enumerate(zip(ta["contribution"], tb["contribution"]))
            if x != y
        ]
        out += [(place, a, b, q, d) for _, _, q, d in sorted(rows)[:top]]
    return out


@pytest.mark.parametrize("plan", ["per-file", "distributed"])
def test_a_pool_s_tables_and_summaries_on_both_plans(tmp_path, plan):
    rng = np.random.default_rng(36)
    gt = make_gt(40, 24)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    (tmp_path / "pool").mkdir()
    frames = {}
    for name, n in (("a", 300), ("b", 200), ("c", 120), ("d", 0)):
        frame = random_submission(rng, gt, n, 5)
        frame.loc[frame["score"] == 0.0, "score"] = -0.0
        frame.to_csv(tmp_path / "pool" / f"{name}.csv", index=False)
        frames[name] = frame
    out = tmp_path / "out"
    args = ["evaluate", "--ground-truth", str(truth), "--predictions", str(tmp_path / "pool")]
    args += ["--output", str(out), "--per-query", "--pool-plan", plan, "--quiet"]
    assert main([*args, "--resamples", "0"]) == 0

    pool = pd.read_parquet(out / "queries.parquet")
    board = json.loads((out / "leaderboard.json").read_text())["submissions"]
    order = [r["submission"] for r in board]
    assert pool["submission"].unique().tolist() == order  # the board's order
    tables = {}
    for r in board:
        name = r["submission"]
        table = pool[pool["submission"] == name].drop(columns="submission").reset_index(drop=True)
        alone = helpers.score_file(
            str(tmp_path / "pool" / f"{name}.csv"), "auto", gt, 0, 50, per_query=True
        )
        pd.testing.assert_frame_equal(table, alone.queries)  # to the bit
        assert_equal_to_oracle(table, frames[name], gt)
        assert math.fsum(table["contribution"]) == pytest.approx(
            r["micro_ap"], rel=1e-12, abs=1e-15
        )
        tables[name] = table
    csv = pd.read_csv(
        out / "queries.csv", float_precision="round_trip", keep_default_na=False, na_values=[""]
    )
    assert csv["contribution"].tolist() == pool["contribution"].tolist()

    missed = pd.read_csv(out / "queries_missed.csv")
    assert list(missed.columns) == list(MISSED_COLUMNS)
    assert list(missed.itertuples(index=False, name=None)) == [
        (*m, 4) for m in brute_missed(tables)
    ]
    separating = pd.read_csv(out / "queries_separating.csv", float_precision="round_trip")
    assert list(separating.columns) == list(SEPARATING_COLUMNS)
    got = separating[["place", "above", "below", "query_id", "difference"]]
    assert list(got.itertuples(index=False, name=None)) == brute_separating(order, tables, 20)


def test_a_hand_computed_pool():
    """Q0 → R0, Q1 → R1, Q2 → R2 (3 true pairs), Q3 a distractor. a: Q0R0 0.9, Q1R9 0.8
    → μAP 1/3 (Q0's 1/3). b: Q1R1 0.9, Q0R5 0.8, Q3R3 0.7 → μAP 1/3 (Q1's). They tie on
    μAP and recall at P90 (1/3 both), so the name puts a first. Q2 is missed by both and
    predicted by none; Q0 and Q1 separate them, 1/3 each way (the gap is 0: no share)."""
    gt, _ = helpers.hand_case(["Q0", "Q1", "Q2", "Q3"], {"Q0": "R0", "Q1": "R1", "Q2": "R2"}, [])
    pairs = ["query_id", "reference_id", "score"]
    tables = {
        "a": pd.DataFrame([("Q0", "R0", 0.9), ("Q1", "R9", 0.8)], columns=pairs),
        "b": pd.DataFrame([("Q1", "R1", 0.9), ("Q0", "R5", 0.8), ("Q3", "R3", 0.7)], columns=pairs),
    }
    truth = pd.DataFrame(
        {"query_id": ["Q0", "Q1", "Q2", "Q3"], "reference_id": ["R0", "R1", "R2", None]}
    )
    board = evaluate_pool(truth, tables, per_query=True, resamples=0)
    assert [board[n].micro_ap for n in "ab"] == [pytest.approx(1 / 3)] * 2
    missed = board.missed_queries()
    assert missed.to_dict("records") == [
        {"query_id": "Q2", "true_pairs": 1, "predicted_by": 0, "submissions": 2}
    ]
    separating = board.separating_queries()
    rows = separating[["place", "above", "below", "query_id", "difference", "rank_above"]]
    assert [tuple(r) for r in rows.itertuples(index=False)] == [
        (1, "a", "b", "Q0", pytest.approx(1 / 3), 1),
        (1, "a", "b", "Q1", pytest.approx(-1 / 3), pd.NA),
    ]
    assert separating["share_of_gap"].isna().all()
    assert board.separating_queries(np.int64(1))["query_id"].tolist() == ["Q0"]
    for top in (-1, 0, 2.5, "3", math.nan, True):
        with pytest.raises(ValueError, match=f"top must be a positive whole number, got {top!r}"):
            board.separating_queries(top)
    assert board.queries()["submission"].tolist() == ["a"] * 4 + ["b"] * 4
    with pytest.raises(ValueError, match="score the pool with per_query=True"):
        evaluate_pool(truth, tables, resamples=0).missed_queries()


def test_per_query_rescores_every_submission_of_a_pool(tmp_path):
    gt = make_gt(20, 12)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    (tmp_path / "pool").mkdir()
    rng = np.random.default_rng(3)
    for name in ("a", "b"):
        random_submission(rng, gt, 60, 5).to_csv(tmp_path / "pool" / f"{name}.csv", index=False)
    args = ["evaluate", "--ground-truth", str(truth), "--predictions", str(tmp_path / "pool")]
    args += ["--resamples", "0", "--quiet"]
    assert main([*args, "--output", str(tmp_path / "first")]) == 0
    again = [*args, "--output", str(tmp_path / "again"), "--per-query"]
    assert main([*again, "--previous", str(tmp_path / "first")]) == 0
    rows = json.loads((tmp_path / "again" / "leaderboard.json").read_text())["submissions"]
    assert [r["reused"] for r in rows] == [False, False]  # a reused one has no table
    assert len(pd.read_parquet(tmp_path / "again" / "queries.parquet")) == 2 * 20


def test_with_a_split_each_board_has_its_own_tables(tmp_path):
    """--per-query beside --private-queries: the published folder's tables hold the
    public queries alone and no file there names a private one; the private board's
    folder has the private queries' tables; each equal to the oracle on the board's
    ground truth and the submission filtered to its queries."""
    from disc21spark.matching.model import GroundTruth

    rng = np.random.default_rng(8)
    gt = make_gt(30, 18)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    (tmp_path / "pool").mkdir()
    frames = {name: random_submission(rng, gt, 150, 5) for name in ("a", "b", "c")}
    for name, frame in frames.items():
        frame.to_csv(tmp_path / "pool" / f"{name}.csv", index=False)
    private = [str(q) for q in gt.query_ids[::3]]
    (tmp_path / "private.csv").write_text("query_id\n" + "".join(f"{q}\n" for q in private))
    out, hidden = tmp_path / "out", tmp_path / "hidden"
    args = ["evaluate", "--ground-truth", str(truth), "--predictions", str(tmp_path / "pool")]
    args += ["--private-queries", str(tmp_path / "private.csv"), "--private-output", str(hidden)]
    assert main([*args, "--output", str(out), "--per-query", "--resamples", "0", "--quiet"]) == 0
    public = [str(q) for q in gt.query_ids if str(q) not in set(private)]
    for folder, ids in ((out, public), (hidden, private)):
        keep = np.isin(gt.positive_queries, ids)
        board = GroundTruth(
            "b",
            np.array(ids, dtype=object),
            gt.positive_queries[keep],
            gt.positive_references[keep],
        )
        pool = pd.read_parquet(folder / "queries.parquet")
        for name, frame in frames.items():
            table = pool[pool["submission"] == name].drop(columns="submission")
            assert table["query_id"].tolist() == ids
            assert_equal_to_oracle(table, frame[frame["query_id"].isin(ids)], board)
    for path in (p for p in out.rglob("*") if p.is_file()):
        text = path.read_bytes()
        assert not [q for q in private if q.encode() in text], path
