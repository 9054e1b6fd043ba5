"""μAP by query group (--query-groups): the groups file's errors, a hand-computed case, the
one counting pass equal to the definition by restriction (matching/oracle/groups.py) on every
engine and plan, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from disc21spark.core.errors import InputError
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.oracle import groups as groups_spec
from disc21spark.matching.stats.groups_file import read_query_groups
from disc21spark.matching.stats.model import Resampling
from tests import helpers
from tests.helpers import make_gt, random_submission, score_file

COLUMNS = ("query_id", "reference_id", "score")


def groups_csv(path: Path, mapping: dict[str, str]) -> Path:
    path.write_text("query_id,group\n" + "".join(f"{q},{g}\n" for q, g in mapping.items()))
    return path


def hand_case(tmp_path: Path):
    """Q000..Q002 one positive each (R000..R002), Q003 a distractor; Q000 in a, Q001 in b."""
    gt, frame = helpers.hand_case(
        ["Q000", "Q001", "Q002", "Q003"],
        {"Q000": "R000", "Q001": "R001", "Q002": "R002"},
        [
            ("Q000", "R000", 0.9),
            ("Q003", "R005", 0.8),
            ("Q001", "R001", 0.7),
            ("Q002", "R002", 0.6),
            ("Q001", "R009", 0.95),
        ],
    )
    groups = read_query_groups(str(groups_csv(tmp_path / "g.csv", {"Q000": "a", "Q001": "b"})), gt)
    return gt, frame, groups


def in_process(tmp_path: Path, frame: pd.DataFrame, gt: GroundTruth, r: Resampling):
    frame.to_csv(tmp_path / "p.csv", index=False)
    metrics = score_file(str(tmp_path / "p.csv"), "auto", gt, 0, 50, resampling=r)
    return metrics.groups


def spec_table(frame: pd.DataFrame, gt: GroundTruth, r: Resampling):
    return groups_spec.group_table(*(frame[c].to_numpy() for c in COLUMNS), gt, r.groups, r)


def test_hand_computed_groups(tmp_path):
    gt, frame, groups = hand_case(tmp_path)
    r = Resampling(0, 0.95, 0, groups)
    table = in_process(tmp_path, frame, gt, r)
    a, b = table.groups
    # a: Q000, Q002 and Q003 — a true pair first (1/1), a non-match, a true pair (2/3)
    assert (a.group, a.n_queries, a.n_positives, a.n_predictions) == ("a", 1, 2, 3)
    assert a.figures["micro_ap"] == pytest.approx(0.5 + 0.5 * 2 / 3, abs=1e-15)
    assert a.figures["recall_at_p90"] == 0.5
    assert (a.figures["recall_at_rank1"], a.figures["recall_at_rank10"]) == (1.0, 1.0)
    # b: Q001, Q002, Q003 — two non-matches, then true pairs at (1, 3) and (2, 4)
    assert (b.n_positives, b.n_predictions) == (2, 4)
    assert b.figures["micro_ap"] == pytest.approx(0.5 / 3 + 0.5 / 2, abs=1e-15)
    assert b.figures["recall_at_p90"] is None  # precision 0.9 never reached
    assert (b.figures["recall_at_rank1"], b.figures["recall_at_rank10"]) == (0.5, 1.0)
    assert table.ungrouped_queries == 2
    assert table == spec_table(frame, gt, r)


def test_table_forms(tmp_path):
    gt, frame, groups = hand_case(tmp_path)
    table = in_process(tmp_path, frame, gt, Resampling(40, 0.9, 1, groups))
    df = table.to_pandas()
    assert list(df["group"]) == ["a", "b"] and np.isnan(df["recall_at_p90"][1])
    assert table.groups[0].intervals["micro_ap"] is not None
    table.write_csv(tmp_path / "groups.csv")
    back = pd.read_csv(tmp_path / "groups.csv", float_precision="round_trip")
    assert back["micro_ap"].tolist() == df["micro_ap"].tolist()
    again = type(table).from_dict(table.to_dict(), table.resampling)
    assert again.groups == table.groups


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 250),
    n_scores=st.sampled_from([1, 5, 10**6]),
    n_groups=st.integers(1, 4),
    resamples=st.sampled_from([0, 30]),
)
def test_in_process_equals_the_definition(tmp_path_factory, seed, n, n_scores, n_groups, resamples):
    tmp = tmp_path_factory.mktemp("groups")
    rng = np.random.default_rng(seed)
    gt = make_gt(30, 18)
    frame = random_submission(rng, gt, n, n_scores)
    # some queries in no group, the others in one of n_groups
    picked = rng.integers(-1, n_groups, size=gt.n_queries)
    mapping = {q: f"g{c}" for q, c in zip(gt.query_ids, picked) if c >= 0}
    if not mapping:
        mapping = {gt.query_ids[0]: "g0"}
    groups = read_query_groups(str(groups_csv(tmp / "g.csv", mapping)), gt)
    r = Resampling(resamples, 0.9, seed % 5, groups)
    found = in_process(tmp, frame, gt, r)
    assert found == spec_table(frame, gt, r)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "g.csv: empty (a header query_id,group and one row per query expected)"),
        (
            "query_id,family\nQ000,a\n",
            "g.csv: line 1: missing column 'group' (has: query_id, family)",
        ),
        ("query_id,group\n", "g.csv: no row after the header (one row per query expected)"),
        (
            "query_id,group\nQ000,a\nQ999,b\n",
            "g.csv: line 3: query 'Q999' is not in the ground truth",
        ),
        (
            "query_id,group\nQ000,a\n\nQ000,b\n",
            "g.csv: line 4: query 'Q000' named twice (first on line 2)",
        ),
        ("query_id,group\nQ000,\n", "g.csv: line 2: empty group"),
        ("query_id,group\nQ000,a,x\n", "g.csv: line 2: 3 fields, the header has 2"),
        (  # an invisible character in a header is shown, not printed as it is
            "query_id,\u200bgroup\nQ000,a\n",
            "g.csv: line 1: missing column 'group' (has: query_id, '\\u200bgroup')",
        ),
        (  # over Python's csv field limit
            "query_id,group\nQ000," + "g" * 131_073 + "\n",
            "g.csv: line 2: a field longer than 131,072 characters (an id or a group name "
            "expected)",
        ),
    ],
    ids=range(9),
)
def test_bad_groups_file_is_one_line(tmp_path, monkeypatch, text, reason):
    monkeypatch.chdir(tmp_path)
    Path("g.csv").write_text(text)
    with pytest.raises(InputError) as err:
        read_query_groups("g.csv", make_gt(3, 2))
    assert str(err.value) == reason


def test_a_groups_file_with_a_byte_order_mark_is_read(tmp_path):
    """Spreadsheets save UTF-8 CSV with a byte-order mark: the header is still found."""
    path = tmp_path / "g.csv"
    path.write_bytes(b"\xef\xbb\xbfquery_id,group\nQ000,a\n")
    groups = read_query_groups(str(path), make_gt(3, 2))
    assert groups.names == ("a",) and groups.codes.tolist() == [0, 1, 1]


def random_groups(tmp: Path, rng, gt: GroundTruth, n_groups: int):
    picked = rng.integers(-1, n_groups, size=gt.n_queries)
    mapping = {q: f"g{c}" for q, c in zip(gt.query_ids, picked) if c >= 0} or {
        gt.query_ids[0]: "g0"
    }
    return read_query_groups(str(groups_csv(tmp / "g.csv", mapping)), gt)


@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 200),
    n_scores=st.sampled_from([1, 7, 10**6]),
    partitions=st.sampled_from([1, 3]),
    bound=st.sampled_from([False, True]),
)
# each partitioning at least once (one an example: a Spark scoring costs seconds here), and
# a bound on the rows: a small input's counts summed and weighed on the driver
@example(seed=4, n=200, n_scores=7, partitions=1, bound=False)
@example(seed=4, n=200, n_scores=7, partitions=3, bound=False)
@example(seed=5, n=200, n_scores=7, partitions=3, bound=True)
def test_spark_plan_equals_the_definition(
    spark, tmp_path_factory, seed, n, n_scores, partitions, bound
):
    from disc21spark.matching.spark import labels
    from disc21spark.matching.spark.score import Scoring, score

    rng = np.random.default_rng(seed)
    gt = make_gt(30, 18)
    frame = random_submission(rng, gt, n, n_scores)
    groups = random_groups(tmp_path_factory.mktemp("groups"), rng, gt, 3)
    for resamples in (0, 25):
        r = Resampling(resamples, 0.9, seed % 5, groups)
        wanted = spec_table(frame, gt, r)
        pairs = spark.createDataFrame(frame, "query_id string, reference_id string, score double")
        pairs = pairs.repartition(partitions).withColumn(labels.SUBMISSION, labels.F.lit(0))
        bounded = len(frame) if bound else None
        scoring = Scoring(gt, 50, partitions, resampling=r, rows_at_most=bounded)
        scored = score(spark, pairs, [0], scoring)
        assert scored.metrics[0].groups == wanted


@pytest.mark.parametrize("partitions, bound", [(2, None), (7, None), (50, None), (7, "rows")])
def test_figures_intervals_and_groups_at_every_partitioning(spark, tmp_path, partitions, bound):
    """The distributed plan's figures, intervals and group table in one scoring, at the
    partitionings the random draws above leave out (many of 50 partitions hold a pair or
    none): each equal to its specification bit for bit, with ties, -0.0, distractors and
    unknown queries (``random_submission``). With a bound on the rows, a small input's
    counts per query are summed and weighed on the driver."""
    from disc21spark.matching.oracle import bootstrap as spec
    from disc21spark.matching.oracle.spec import evaluate
    from disc21spark.matching.spark import labels
    from disc21spark.matching.spark.score import Scoring, score
    from tests.helpers import assert_same, assert_same_uncertainty

    rng = np.random.default_rng(partitions)
    gt = make_gt(30, 18)
    frame = random_submission(rng, gt, 300, 7)
    frame.loc[frame["score"] == 0.0, "score"] = -0.0  # ties with 0.0 in the official order
    r = Resampling(25, 0.9, 3, random_groups(tmp_path, rng, gt, 3))
    pairs = spark.createDataFrame(frame, "query_id string, reference_id string, score double")
    pairs = pairs.repartition(partitions).withColumn(labels.SUBMISSION, labels.F.lit(0))
    rows_at_most = len(frame) if bound else None
    scoring = Scoring(gt, 50, partitions, resampling=r, rows_at_most=rows_at_most)
    found = score(spark, pairs, [0], scoring).metrics[0]
    columns = [frame[c].to_numpy() for c in COLUMNS]
    assert_same(found, evaluate(*columns, gt, 50))
    assert_same_uncertainty(found.uncertainty, spec.bootstrap(*columns, gt, r))
    assert found.groups == spec_table(frame, gt, r)


def test_both_pool_plans_and_the_leaderboard(spark, tmp_path):
    import json

    from disc21spark.pool import job as pool_job
    from tests.helpers import gt_csv

    gt = make_gt(30, 18)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    rng = np.random.default_rng(9)
    groups = random_groups(tmp_path, rng, gt, 3)
    frames = {}
    for i in range(2):
        frames[f"team{i}"] = random_submission(rng, gt, 120, 9)
        frames[f"team{i}"].iloc[::-1].to_csv(tmp_path / f"team{i}.csv", index=False)
    r = Resampling(30, 0.95, 3, groups)
    common = dict(
        max_results=0, resamples=30, confidence=0.95, seed=3, query_groups=str(tmp_path / "g.csv")
    )
    for plan in ("per-file", "distributed"):
        out = tmp_path / plan
        job = pool_job.PoolJob(
            str(truth), [str(tmp_path / "team*.csv")], str(out), pool_plan=plan, **common
        )
        for s in pool_job.run(spark, job).submissions:
            assert s.metrics.groups == spec_table(frames[s.name], gt, r)
    board = json.loads((tmp_path / "distributed" / "leaderboard.json").read_text())
    first = board["submissions"][0]
    assert [g["group"] for g in first["groups"]["groups"]] == list(groups.names)
    assert "μAP by query group" in (tmp_path / "distributed" / "leaderboard.md").read_text()
    assert 'id="groups"' in (tmp_path / "distributed" / "leaderboard.html").read_text()
    header = (tmp_path / "distributed" / "leaderboard.csv").read_text().splitlines()[0]
    assert header.endswith(",".join(f"micro_ap:{n}" for n in groups.names))
    # a previous run's group figures are reused as they were written
    again = pool_job.PoolJob(
        str(truth),
        [str(tmp_path / "team*.csv")],
        str(tmp_path / "again"),
        previous=str(tmp_path / "distributed"),
        **common,
    )
    result = pool_job.run(spark, again)
    assert all(s.reused for s in result.submissions)
    assert (
        json.loads((tmp_path / "again" / "leaderboard.json").read_text())["submissions"][0][
            "groups"
        ]
        == first["groups"]
    )


def test_the_command_line_writes_the_groups_and_refuses_a_bad_file(tmp_path, capsys):
    import json

    from disc21spark.commands import main
    from tests.helpers import gt_csv

    gt, frame, _ = hand_case(tmp_path)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    frame.to_csv(tmp_path / "p.csv", index=False)
    base = [
        "evaluate",
        "--engine",
        "local",
        "--ground-truth",
        str(truth),
        "--predictions",
        str(tmp_path / "p.csv"),
        "--resamples",
        "0",
        "--quiet",
    ]
    out = tmp_path / "out"
    assert main([*base, "--query-groups", str(tmp_path / "g.csv"), "--output", str(out)]) == 0
    doc = json.loads((out / "metrics.json").read_text())
    assert [g["group"] for g in doc["groups"]["groups"]] == ["a", "b"]
    assert doc["groups"]["groups"][1]["recall_at_p90"] is None
    assert doc["run"]["query_groups"] == str(tmp_path / "g.csv")
    assert (out / "groups.csv").read_text().splitlines()[1].startswith("a,1,2,3,")
    (tmp_path / "bad.csv").write_text("query_id,group\nQ000,a\nQ000,b\n")
    capsys.readouterr()
    code = main(
        [*base, "--query-groups", str(tmp_path / "bad.csv"), "--output", str(tmp_path / "o2")]
    )
    assert code == 2 and not (tmp_path / "o2").exists()
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {tmp_path / 'bad.csv'}: line 3: query 'Q000' named twice (first on line 2)"
    )
