"""How many queries a difference needs (docs/statistics.md): ``Leaderboard.queries_needed``
by hand, and the detectable difference held against a simulation that subsamples the
queries of a pool."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import disc21spark as ds

# the simulated pool: queries, candidates per query, the two systems' true-pair means
N_QUERIES, PER_QUERY, SYSTEMS = 4000, 5, {"a": 1.6, "b": 1.3}
# docs/statistics.md states it: the detectable difference of m queries, predicted from n
# as δ_n · √(n / m), is within 20 % of the one m subsampled queries give
TOLERANCE = 0.20


def simulated_pool(seed: int) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """A ground truth of N_QUERIES queries, half of them with a true reference, and two
    systems: each query's PER_QUERY candidates score N(0, 1), the true reference (found
    for 80 % of the positive queries) N(mean, 1)."""
    rng = np.random.default_rng(seed)
    queries = np.array([f"Q{i:05d}" for i in range(N_QUERIES)], dtype=object)
    refs = np.array([f"R{i:05d}" for i in range(N_QUERIES)], dtype=object)
    positive = rng.random(N_QUERIES) < 0.5
    gt = pd.DataFrame({"query_id": queries, "reference_id": np.where(positive, refs, "")})
    subs = {}
    for name, mean in SYSTEMS.items():
        reference = refs[rng.integers(0, N_QUERIES, N_QUERIES * PER_QUERY)]
        score = rng.normal(0, 1, N_QUERIES * PER_QUERY)
        found = positive & (rng.random(N_QUERIES) < 0.8)
        first = np.arange(0, N_QUERIES * PER_QUERY, PER_QUERY)[found]
        reference[first] = refs[found]
        score[first] = rng.normal(mean, 1, int(found.sum()))
        frame = pd.DataFrame(
            {"query_id": np.repeat(queries, PER_QUERY), "reference_id": reference, "score": score}
        )
        subs[name] = frame.drop_duplicates(["query_id", "reference_id"])
    return gt, subs


def board(gt: pd.DataFrame, subs: dict[str, pd.DataFrame]) -> ds.Leaderboard:
    return ds.evaluate_pool(gt, subs, engine="local", resamples=300, seed=1)


def first_detectable(b: ds.Leaderboard) -> float:
    table = b.table
    return float(table.loc[table["rank"] == 1, "next_detectable"].iloc[0])


def test_queries_needed_by_hand():
    gt, subs = simulated_pool(0)
    b = board(gt, subs)
    least = first_detectable(b)
    table = b.queries_needed(0.01)
    assert list(table.columns) == ["rank", "submission", "next_detectable", "queries_needed"]
    assert len(table) == 1 and table["submission"].iloc[0] == "a"
    assert table["queries_needed"].iloc[0] == math.ceil(N_QUERIES * (least / 0.01) ** 2)
    # the difference these queries detect needs these queries
    assert b.queries_needed(least)["queries_needed"].iloc[0] == N_QUERIES
    # a numpy float is a number; a bool, a text, a difference no board shows or over 1 not
    assert b.queries_needed(np.float32(0.5))["queries_needed"].iloc[0] == math.ceil(
        N_QUERIES * (least / float(np.float32(0.5))) ** 2
    )
    bad = (0, -0.01, float("nan"), float("inf"), "0.01", True, 1e-300, 5e-324, 10**400, 1.5)
    for difference in bad:
        with pytest.raises(
            ValueError, match="difference must be a μAP difference from 0.000001 to 1"
        ):
            b.queries_needed(difference)


def test_identical_submissions_need_no_number_of_queries():
    """Two submissions alike score the same on every resample: no gap between them is
    detectable, so no count of queries is given, and the line says why."""
    from disc21spark.matching.stats import compare
    from disc21spark.pool import report

    gt, subs = simulated_pool(0)
    b = ds.evaluate_pool(gt, {"a": subs["a"], "b": subs["a"]}, engine="local", resamples=50)
    table = b.queries_needed(0.01)
    assert table["next_detectable"].tolist() == [0.0] and table["queries_needed"].isna().all()
    assert b.table["next_queries_needed"].isna().all()
    assert report.queries_needed_lines(b.submissions, 0.01)[1] == (
        "    1  a: no number of queries (it and the next place score the same on every resample)"
    )
    assert compare.detectable_sentence(b.to_dict()["submissions"]) is None


def test_without_intervals_nothing_is_needed_or_detectable():
    gt, subs = simulated_pool(0)
    table = ds.evaluate_pool(gt, subs, engine="local", resamples=0).queries_needed(0.01)
    assert table["queries_needed"].isna().all() and table["next_detectable"].isna().all()


@pytest.mark.parametrize("seed", [1, 2])
def test_the_detectable_difference_agrees_with_subsampled_queries(seed):
    """The detectable difference of m = n/4 queries predicted from the whole pool's
    (δ_n · √(n/m)) equals the median of five subsamples of m queries within TOLERANCE,
    and so does the inverse: the queries that difference needs are about m."""
    gt, subs = simulated_pool(seed)
    whole = board(gt, subs)
    rng = np.random.default_rng(seed)
    m = N_QUERIES // 4
    found = []
    for _ in range(5):
        keep = set(rng.choice(gt["query_id"].to_numpy(), size=m, replace=False))
        part = {name: f[f["query_id"].isin(keep)] for name, f in subs.items()}
        found.append(first_detectable(board(gt[gt["query_id"].isin(keep)], part)))
    simulated = float(np.median(found))
    predicted = first_detectable(whole) * math.sqrt(N_QUERIES / m)
    assert abs(simulated / predicted - 1) <= TOLERANCE, (simulated, predicted)
    needed = whole.queries_needed(simulated)["queries_needed"].iloc[0]
    assert (1 - TOLERANCE) ** 2 <= m / needed <= (1 + TOLERANCE) ** 2, (needed, m)


def test_the_pool_command_writes_and_says_the_queries_needed(spark, tmp_path, capsys):
    """``evaluate --queries-needed`` on a pool: queries_needed.csv and the terminal's
    lines say what ``Leaderboard.queries_needed`` says."""
    from disc21spark.commands import main

    gt, subs = simulated_pool(3)
    gt.to_csv(tmp_path / "gt.csv", index=False)
    (tmp_path / "pool").mkdir()
    for name, frame in subs.items():
        frame.head(6000).to_csv(tmp_path / "pool" / f"{name}.csv", index=False)
    args = ["evaluate", "--ground-truth", str(tmp_path / "gt.csv"), "--predictions"]
    args += [str(tmp_path / "pool"), "--output", str(tmp_path / "out"), "--resamples", "100"]
    assert main([*args, "--queries-needed", "0.005", "--max-results", "0"]) == 0
    written = pd.read_csv(tmp_path / "out" / "queries_needed.csv", float_precision="round_trip")
    api = ds.evaluate_pool(
        str(tmp_path / "gt.csv"),
        [str(tmp_path / "pool")],
        engine=spark,
        resamples=100,
        max_results=0,
    ).queries_needed(0.005)
    assert written["queries_needed"].tolist() == api["queries_needed"].tolist()
    assert written["next_detectable"].tolist() == api["next_detectable"].tolist()
    said = capsys.readouterr().out
    first = api.iloc[0]
    assert f"{first['submission']}: {first['queries_needed']:,} queries" in said
    with pytest.raises(SystemExit):
        main([*args, "--queries-needed", "0", "--output", str(tmp_path / "o2")])
    assert (
        "--queries-needed must be a μAP difference from 0.000001 to 1, such as 0.01 (got 0.0)"
        in (capsys.readouterr().err)
    )
