"""Public and private boards (--private-queries, --private-output): each board equal to the
pool scored on that board's ground truth and the filtered files alone, on both pool
plans; validity judged on the files as submitted; nothing private in the published
folder; --previous reuse; the split file's errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from disc21spark.commands import main
from disc21spark.core.errors import InputError
from disc21spark.matching.model import GroundTruth
from disc21spark.pool.split import PRIVATE, PUBLIC, read_split
from tests.helpers import assert_same, assert_same_uncertainty, gt_csv, make_gt, random_submission

SETTINGS = dict(max_results=0, resamples=20, confidence=0.9, seed=3)


def private_csv(path: Path, ids: list[str]) -> Path:
    path.write_text("query_id\n" + "".join(f"{q}\n" for q in ids))
    return path


def a_pool(tmp_path: Path):
    """Four submissions of a 40-query ground truth, 16 queries private; ``broken``
    repeats a pair of a private query: invalid on both boards."""
    gt = make_gt(40, 25)
    rng = np.random.default_rng(7)
    private = sorted(rng.choice(gt.query_ids, 16, replace=False))
    frames = {f"team{i}": random_submission(rng, gt, 200, 9) for i in range(3)}
    broken = random_submission(rng, gt, 50, 9)
    repeat = broken[broken["query_id"] == private[0]].head(1)
    if repeat.empty:
        repeat = pd.DataFrame([(private[0], "R999", 0.5)], columns=broken.columns)
    frames["broken"] = pd.concat([broken, repeat, repeat], ignore_index=True)
    folder = tmp_path / "pool"
    folder.mkdir()
    for name, frame in frames.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
    split = private_csv(tmp_path / "private.csv", private)
    return gt, frames, private, gt_csv(tmp_path / "gt.csv", gt), split


def board_alone(tmp_path: Path, gt: GroundTruth, frames: dict, ids: list[str], name: str):
    """The pool scored on the board's ground truth and the filtered files alone."""
    from disc21spark.pool.job import PoolJob

    keep = np.isin(gt.positive_queries, ids)
    board = GroundTruth(
        "b", np.array(ids, dtype=object), gt.positive_queries[keep], gt.positive_references[keep]
    )
    folder = tmp_path / f"alone-{name}"
    folder.mkdir()
    for sub, frame in frames.items():
        if sub != "broken":
            frame[frame["query_id"].isin(ids)].to_csv(folder / f"{sub}.csv", index=False)
    truth = gt_csv(tmp_path / f"gt-{name}.csv", board)
    return PoolJob(str(truth), [str(folder / "*.csv")], None, pool_plan="distributed", **SETTINGS)


@pytest.mark.parametrize("plan", ["per-file", "distributed"])
def test_each_board_equals_its_split_scored_alone(spark, tmp_path, plan):
    from disc21spark.pool import job as pool_job

    gt, frames, private, truth, split = a_pool(tmp_path)
    public = [q for q in gt.query_ids if q not in set(private)]
    out, hidden = tmp_path / "out", tmp_path / "hidden"
    job = pool_job.PoolJob(
        str(truth),
        [str(tmp_path / "pool" / "*.csv")],
        str(out),
        pool_plan=plan,
        private_queries=str(split),
        private_output=str(hidden),
        **SETTINGS,
    )
    result = pool_job.run(spark, job)
    boards = {PUBLIC: result.submissions, PRIVATE: result.private}
    for name, ids in ((PUBLIC, public), (PRIVATE, private)):
        alone = pool_job.run(spark, board_alone(tmp_path, gt, frames, list(ids), name))
        wanted = {s.name: s.metrics for s in alone.submissions}
        for s in boards[name]:
            if s.name == "broken":  # judged on the file as submitted: a repeated pair
                assert s.status == "invalid"
                # of a private query: the public board withholds the reason
                assert ("duplicate pair" in s.reason) == (name == PRIVATE)
                continue
            assert_same(s.metrics, wanted[s.name])
            assert_same_uncertainty(s.metrics.uncertainty, wanted[s.name].uncertainty)
    assert_nothing_private_published(out, result.private, private)
    changes = pd.read_csv(hidden / "rank_changes.csv")
    ranks = {
        name: [
            r["submission"]
            for r in json.loads((d / "leaderboard.json").read_text())["submissions"]
            if r["status"] == "ok"
        ]
        for name, d in ((PUBLIC, out), (PRIVATE, hidden))
    }
    assert changes["submission"].tolist() == ranks[PRIVATE]
    for row in changes.itertuples():
        assert ranks[PUBLIC].index(row.submission) + 1 == row.public_rank
        assert row.rank_change == row.public_rank - row.private_rank
    doc = json.loads((out / "leaderboard.json").read_text())["run"]
    assert doc["board"] == PUBLIC and "private_queries" not in doc


def assert_nothing_private_published(out: Path, private_board: list, private_ids: list) -> None:
    """No file of the published folder names a private query or holds a private figure."""
    figures = set()
    for s in private_board:
        if s.metrics is not None:
            figures |= {repr(s.metrics.micro_ap), f"{s.metrics.micro_ap:.6f}"}
    needles = [q.encode() for q in private_ids] + [f.encode() for f in figures]
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        found = [n.decode() for n in needles if n in data]
        assert not found, f"{path.relative_to(out)} holds {found}"


def test_misnamed_ids_are_flagged_on_both_boards(spark, tmp_path):
    """A submission whose ids are image paths (images/Q000.jpg) scores 0 on both boards:
    each board says why, with the warnings of the file as submitted; the public one
    without an example that names a private query. On the command line and for a pool
    of tables alike."""
    import disc21spark as ds

    gt = make_gt(20, 12)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    good = random_submission(np.random.default_rng(1), gt, 80, 5)
    bad = good.assign(query_id="images/" + good["query_id"] + ".jpg")
    (tmp_path / "pool").mkdir()
    for name, frame in (("good", good), ("bad", bad)):
        frame.to_csv(tmp_path / "pool" / f"{name}.csv", index=False)
    private = [f"Q{i:03d}" for i in range(0, 20, 2)]  # Q000, the example, among them
    split = private_csv(tmp_path / "private.csv", private)
    found = ds.evaluate(truth, tmp_path / "pool" / "bad.csv", engine="local").warnings
    assert len(found) == 2 and "(e.g. 'images/Q000.jpg' for 'Q000')" in found[1]
    public = (found[0], found[1].replace(" (e.g. 'images/Q000.jpg' for 'Q000')", ""))
    out, hidden = tmp_path / "out", tmp_path / "hidden"
    args = ["evaluate", "--ground-truth", str(truth), "--predictions", str(tmp_path / "pool")]
    args += ["--output", str(out), "--private-queries", str(split), "--private-output"]
    assert main([*args, str(hidden), "--resamples", "0", "--quiet"]) == 0
    for folder, wanted in ((out, public), (hidden, found)):
        rows = json.loads((folder / "leaderboard.json").read_text())["submissions"]
        assert {r["submission"]: tuple(r["warnings"]) for r in rows} == {"good": (), "bad": wanted}
    assert_nothing_private_published(out, [], private)
    board = ds.evaluate_pool(
        truth, {"good": good, "bad": bad}, private_queries=split, engine="local", resamples=0
    )
    assert board["bad"].warnings == public and board.private["bad"].warnings == found


def test_explain_tells_the_boards_plan(spark, tmp_path, capsys):
    """--explain with a split: the validity pass's plan, then the boards' second reads."""
    from disc21spark.pool.publish import BOARDS_IN_PROCESS, BOARDS_PLAN

    gt, frames, private, truth, split = a_pool(tmp_path)
    args = ["evaluate", "--ground-truth", str(truth), "--predictions", str(tmp_path / "pool")]
    args += ["--output", str(tmp_path / "out"), "--private-queries", str(split)]
    args += ["--private-output", str(tmp_path / "hidden"), "--explain"]
    for more, boards in (([], BOARDS_IN_PROCESS), (["--engine", "spark"], BOARDS_PLAN)):
        assert main([*args, *more]) == 0
        said = capsys.readouterr().out.splitlines()
        assert said[-1] == f"boards: {boards}" and "plan: per-file" in said
    assert not (tmp_path / "out").exists() and not (tmp_path / "hidden").exists()


def test_a_rerun_reuses_the_public_board_and_rescores_the_private_one(spark, tmp_path):
    from disc21spark.pool import job as pool_job

    gt, frames, private, truth, split = a_pool(tmp_path)
    common = dict(private_queries=str(split), pool_plan="distributed", max_results=0, resamples=0)

    def scored(out: str | None, **options):
        job = pool_job.PoolJob(str(truth), [str(tmp_path / "pool")], out, **{**common, **options})
        return pool_job.run(spark, job)

    first = scored(str(tmp_path / "a"), private_output=str(tmp_path / "pa"))
    again = scored(
        str(tmp_path / "b"), private_output=str(tmp_path / "pb"), previous=str(tmp_path / "a")
    )
    # broken's reason names a private query: withheld on the public board, found again
    assert [s.name for s in again.submissions if not s.reused] == ["broken"]

    def rows(folder: str) -> list[dict]:
        board = json.loads((tmp_path / folder / "leaderboard.json").read_text())["submissions"]
        return [{k: v for k, v in r.items() if k != "reused"} for r in board]

    assert rows("a") == rows("b") and rows("pa") == rows("pb")
    assert (tmp_path / "pa" / "rank_changes.csv").read_text() == (
        tmp_path / "pb" / "rank_changes.csv"
    ).read_text()
    assert [s.metrics for s in again.private] == [s.metrics for s in first.private]
    # another split is another public board: nothing of it is reused
    from disc21spark.pool.report import read_previous

    assert read_previous(str(tmp_path / "a"), first.settings)
    other = {**first.settings, "private_queries_hmac_sha256": "0" * 64}
    assert read_previous(str(tmp_path / "a"), other) == {}


def test_the_api_returns_both_boards(spark, tmp_path):
    from disc21spark import Leaderboard, evaluate_pool

    gt, frames, private, truth, split = a_pool(tmp_path)
    board = evaluate_pool(
        str(truth), [str(tmp_path / "pool")], engine=spark, private_queries=split, resamples=0
    )
    assert board.private is not None and len(board.private) == len(board) == 4
    changes = board.rank_changes()
    assert list(changes.columns)[:3] == ["submission", "public_rank", "private_rank"]
    assert sorted(changes["submission"]) == ["team0", "team1", "team2"]
    with pytest.raises(ValueError, match="no private board"):
        Leaderboard(board.submissions).rank_changes()


@pytest.mark.parametrize(
    "text, reason",
    [
        ("query_id\nQ001\nQ999\n", "line 3: query 'Q999' is not in the ground truth"),
        ("query_id\nQ001\nQ002\nQ001\n", "line 4: query 'Q001' named twice (first on line 2)"),
        ("", "empty (a header query_id and one row per query expected)"),
        ("query_id\n", "no row after the header (one row per query expected)"),
        ("id\nQ001\n", "line 1: missing column 'query_id' (has: id)"),
        (
            "query_id\nQ000\nQ001\nQ002\n",
            "names all 3 queries of the ground truth: no public query left",
        ),
        (
            "query_id\nQ002\n",
            "the private board has no positive pair (every query with a match is public): "
            "its μAP would be 0 for every submission",
        ),
        (
            "query_id\nQ000\nQ001\n",
            "the public board has no positive pair (every query with a match is private): "
            "its μAP would be 0 for every submission",
        ),
        (  # an invisible character in the header is shown
            "query\u200b_id\nQ001\n",
            "line 1: missing column 'query_id' (has: 'query\\u200b_id')",
        ),
        (
            "query_id\n" + "Q" * 131_073 + "\n",
            "line 2: a field longer than 131,072 characters (an id or a group name expected)",
        ),
    ],
    ids=range(10),
)
def test_a_bad_private_queries_file_is_one_line(tmp_path, text, reason):
    gt = make_gt(3, 2)
    path = tmp_path / "private.csv"
    path.write_text(text)
    with pytest.raises(InputError) as raised:
        read_split(str(path), gt)
    assert str(raised.value) == f"{path}: {reason}"


def test_a_split_file_with_a_byte_order_mark_is_read(tmp_path):
    """Spreadsheets save UTF-8 CSV with a byte-order mark: the header is still found."""
    path = tmp_path / "private.csv"
    path.write_bytes(b"\xef\xbb\xbfquery_id\nQ001\n")
    assert read_split(str(path), make_gt(3, 2)).private.tolist() == [False, True, False]


def test_the_command_line_refuses_a_bad_split_before_publishing(tmp_path, capsys):
    gt = make_gt(6, 4)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    random_submission(np.random.default_rng(1), gt, 30, 5).to_csv(tmp_path / "a.csv", index=False)
    base = ["evaluate", "--ground-truth", str(truth), "--quiet", "--predictions"]
    cases = [
        (
            ["--output", str(tmp_path / "out"), "--private-queries", "p.csv"],
            "--private-queries needs --private-output DIR: the private board's folder",
        ),
        (
            ["--output", str(tmp_path / "out"), "--private-output", str(tmp_path / "h")],
            "--private-output needs --private-queries (the queries of the private board)",
        ),
        (
            [
                "--output",
                str(tmp_path / "out"),
                "--private-queries",
                "p.csv",
                "--private-output",
                str(tmp_path / "out" / "private"),
            ],
            f"--private-output {tmp_path / 'out' / 'private'} is inside --output "
            f"{tmp_path / 'out'}: the private board must never be published with the public one",
        ),
    ]
    for extra, message in cases:
        with pytest.raises(SystemExit) as stopped:
            main([*base, str(tmp_path / "a.csv"), *extra])
        assert stopped.value.code == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].endswith(f"error: {message}")
    private_csv(tmp_path / "p.csv", ["Q000"])
    one = [*base, str(tmp_path / "a.csv"), "--output", str(tmp_path / "out")]
    one += ["--private-queries", str(tmp_path / "p.csv"), "--private-output", str(tmp_path / "h")]
    assert main(one) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --private-queries is for a pool's boards: give several files, a glob, a "
        "folder or --submission-column"
    )
    assert not (tmp_path / "out").exists() and not (tmp_path / "h").exists()


def test_a_frozen_board_stays_and_a_corrected_ground_truth_is_scored_beside_it(spark, tmp_path):
    from disc21spark.core.errors import OutputError
    from disc21spark.pool import job as pool_job

    gt = make_gt(30, 20)
    rng = np.random.default_rng(11)
    (tmp_path / "pool").mkdir()
    for i in range(3):
        random_submission(rng, gt, 150, 9).to_csv(tmp_path / "pool" / f"team{i}.csv", index=False)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    common = dict(pool_plan="distributed", max_results=0, resamples=0)
    frozen = tmp_path / "frozen"
    pool_job.run(
        spark,
        pool_job.PoolJob(str(truth), [str(tmp_path / "pool")], str(frozen), freeze=True, **common),
    )
    kept = {p: p.read_bytes() for p in frozen.rglob("*") if p.is_file()}
    assert json.loads((frozen / "FROZEN.json").read_text())["submissions"] == 3
    with pytest.raises(OutputError, match="a frozen board, which no run replaces"):
        pool_job.run(
            spark,
            pool_job.PoolJob(
                str(truth), [str(tmp_path / "pool")], str(frozen), overwrite=True, **common
            ),
        )
    assert {p: p.read_bytes() for p in frozen.rglob("*") if p.is_file()} == kept
    # a corrected label, and team2 made invalid (a repeated pair) since the freeze
    fixed = GroundTruth("g", gt.query_ids, gt.positive_queries, gt.positive_references.copy())
    fixed.positive_references[:5] = ["R025", "R026", "R027", "R028", "R029"]
    corrected = gt_csv(tmp_path / "fixed.csv", fixed)
    team2 = tmp_path / "pool" / "team2.csv"
    team2.write_text(team2.read_text() + team2.read_text().splitlines()[1] + "\n")
    rescored = tmp_path / "rescored"
    pool_job.run(
        spark,
        pool_job.PoolJob(
            str(corrected),
            [str(tmp_path / "pool")],
            str(rescored),
            compare_to=str(frozen),
            **common,
        ),
    )
    before = json.loads((frozen / "leaderboard.json").read_text())
    after = json.loads((rescored / "leaderboard.json").read_text())
    assert after["run"]["compared_ground_truth_sha256"] == before["run"]["ground_truth_sha256"]
    assert after["run"]["ground_truth_sha256"] != before["run"]["ground_truth_sha256"]
    table = pd.read_csv(rescored / "changes.csv", float_precision="round_trip")
    old = {r["submission"]: r for r in before["submissions"]}
    new = {r["submission"]: r for r in after["submissions"]}
    assert sorted(table["submission"]) == ["team0", "team1", "team2"]
    for row in table.itertuples():
        a, b = old[row.submission], new[row.submission]
        assert (row.status_before, row.status_after) == (a["status"], b["status"])
        assert row.validity_changed == (row.submission == "team2")
        if b["status"] == "ok":
            assert row.rank_change == a["rank"] - b["rank"]
            assert row.micro_ap_delta == b["micro_ap"] - a["micro_ap"]
            assert row.micro_ap_after == b["micro_ap"]
    assert (frozen / "FROZEN.json").exists() and not (rescored / "FROZEN.json").exists()


def test_board_options_on_one_submission_and_a_missing_board_are_one_line(tmp_path, capsys):
    gt = make_gt(6, 4)
    truth = gt_csv(tmp_path / "gt.csv", gt)
    random_submission(np.random.default_rng(1), gt, 30, 5).to_csv(tmp_path / "a.csv", index=False)
    base = ["evaluate", "--ground-truth", str(truth), "--quiet", "--output", str(tmp_path / "o")]
    assert main([*base, "--predictions", str(tmp_path / "a.csv"), "--freeze"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --freeze is for a pool's boards: give several files, a glob, a folder or "
        "--submission-column"
    )
    (tmp_path / "b.csv").write_text((tmp_path / "a.csv").read_text())
    pool = [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]
    (tmp_path / "empty").mkdir()
    code = main([*base, "--predictions", *pool, "--compare-to", str(tmp_path / "empty")])
    assert code == 2 and not (tmp_path / "o").exists()
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: --compare-to {tmp_path / 'empty'}: no leaderboard.json there (not a board)"
    )
    (tmp_path / "empty" / "leaderboard.json").write_bytes(b"\xff\xfe not UTF-8")
    code = main([*base, "--predictions", *pool, "--compare-to", str(tmp_path / "empty")])
    assert code == 2 and not (tmp_path / "o").exists()
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .startswith(
            f"error: --compare-to {tmp_path / 'empty'}: not a leaderboard this tool wrote "
            "(UnicodeDecodeError: "
        )
    )


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_pool_of_tables_has_the_same_boards(spark, tmp_path, engine):
    """``evaluate_pool(tables, private_queries=...)``: each board equal to the board alone
    (its ground truth, the tables filtered to its queries), validity judged on the tables
    as given, in process and on Spark."""
    from disc21spark import evaluate_pool

    gt, frames, private, truth, split = a_pool(tmp_path)
    public = [q for q in gt.query_ids if q not in set(private)]
    if engine == "spark":
        tables = {name: spark.createDataFrame(frame) for name, frame in frames.items()}
    else:  # an Arrow table among the pandas ones
        import pyarrow as pa

        tables = {**frames, "team0": pa.Table.from_pandas(frames["team0"], preserve_index=False)}
    options = {k: v for k, v in SETTINGS.items()}
    board = evaluate_pool(str(truth), tables, private_queries=split, engine=engine, **options)
    boards = {PUBLIC: board, PRIVATE: board.private}
    for name, ids in ((PUBLIC, public), (PRIVATE, private)):
        keep = np.isin(gt.positive_queries, ids)
        alone_gt = pd.DataFrame({"query_id": ids, "reference_id": [None] * len(ids)}).set_index(
            "query_id"
        )
        alone_gt.loc[gt.positive_queries[keep], "reference_id"] = gt.positive_references[keep]
        filtered = {n: f[f["query_id"].isin(ids)] for n, f in frames.items() if n != "broken"}
        alone = evaluate_pool(alone_gt.reset_index(), filtered, engine="local", **options)
        for s in boards[name].submissions:
            if s.name == "broken":
                assert s.status == "invalid"
                assert ("duplicate pair" in s.reason) == (name == PRIVATE)
                continue
            assert_same(s.metrics, alone[s.name])
            assert_same_uncertainty(s.metrics.uncertainty, alone[s.name].uncertainty)
    assert board.rank_changes()["submission"].tolist() == [
        s for s in board.private.table["submission"] if s != "broken"
    ]


def groups_csv(path: Path, groups: dict[str, str]) -> Path:
    path.write_text("query_id,group\n" + "".join(f"{q},{g}\n" for q, g in groups.items()))
    return path


@pytest.mark.parametrize("pool", ["files", "tables"])
def test_query_groups_on_each_board(spark, tmp_path, pool):
    """--query-groups beside --private-queries: each board's group figures and intervals
    equal to the board alone with the groups file cut to its queries; a group whose
    queries are all private is not on the public board."""
    from dataclasses import replace

    from disc21spark import evaluate_pool
    from disc21spark.pool import job as pool_job

    gt, frames, private, truth, split = a_pool(tmp_path)
    public = [q for q in gt.query_ids if q not in set(private)]
    groups = {
        q: ("hidden" if q in set(private[:4]) else "ab"[i % 2]) for i, q in enumerate(gt.query_ids)
    }
    groups = {q: g for q, g in groups.items() if g == "hidden" or q not in set(private[:4])}
    path = groups_csv(tmp_path / "groups.csv", groups)
    options = {**SETTINGS, "query_groups": str(path), "private_queries": split}
    if pool == "files":
        board = evaluate_pool(str(truth), [str(tmp_path / "pool" / "*.csv")], **options)
    else:
        board = evaluate_pool(str(truth), frames, engine="local", **options)
    for name, ids, boards in ((PUBLIC, public, board), (PRIVATE, private, board.private)):
        cut = groups_csv(
            tmp_path / f"groups-{name}.csv", {q: groups[q] for q in ids if q in groups}
        )
        alone = pool_job.run(
            spark,
            replace(board_alone(tmp_path, gt, frames, list(ids), name), query_groups=str(cut)),
        )
        wanted = {s.name: s.metrics for s in alone.submissions}
        for s in boards.submissions:
            if s.status != "ok":
                continue
            pd.testing.assert_frame_equal(s.metrics.by_group(), wanted[s.name].by_group())
            assert_same(s.metrics, wanted[s.name])
        names = set(boards["team0"].by_group()["group"])
        assert ("hidden" in names) == (name == PRIVATE)
