"""Submission pools: one plan for many submissions equals scoring each alone; bad
submissions are marked, not fatal; incremental runs equal full runs."""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from disc21spark import engine
from disc21spark.core import faults
from disc21spark.core.errors import InputError
from disc21spark.matching.inprocess.source import Source
from disc21spark.matching.model import Settings, Submission
from disc21spark.matching.oracle.spec import evaluate
from disc21spark.matching.spark import per_file
from disc21spark.pool import job as pool
from disc21spark.resolve import resolve
from tests.conftest import ROOT, cli_env
from tests.helpers import watch_census_slices
from tests.pool_helpers import GT, ground_truth, mount, random_submission
from tests.running import in_process, succeed


@pytest.fixture
def gt_file(tmp_path) -> str:
    path = tmp_path / "gt.csv"
    GT.to_csv(path, index=False)
    return str(path)


def write_pool(folder: Path, seed: int, n_subs: int) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    subs = {}
    for i in range(n_subs):
        frame = random_submission(rng, int(rng.integers(0, 120)))
        name = f"team{i:02d}" if i else "team 00"  # a space: Spark URL-encodes file names
        if i % 3 == 2:
            frame.to_parquet(folder / f"{name}.parquet", index=False)
        else:
            frame.to_csv(folder / f"{name}.csv", index=False, header=bool(i % 2))
        subs[name] = frame
    return subs


@pytest.mark.parametrize("with_parquet", [False, True])
def test_a_distributed_pools_bound_is_its_largest_plain_csv_file(
    spark, tmp_path, gt_file, monkeypatch, with_parquet
):
    """The distributed plan's census takes a pool's bound on its rows from its largest
    plain CSV file, so no job counts the most rows of a query first; a Parquet file in
    the pool tells nothing, and the job counts. The board is the specification's."""
    folder, rng = tmp_path / "pool", np.random.default_rng(5)
    folder.mkdir()
    subs = {f"t{i}": random_submission(rng, n) for i, n in enumerate((40, 90, 30))}
    for name, frame in subs.items():
        if name == "t2" and with_parquet:
            frame.to_parquet(folder / f"{name}.parquet", index=False)
        else:
            frame.to_csv(folder / f"{name}.csv", index=False)
    bounds, counted = watch_census_slices(monkeypatch)
    result = pool.run(spark, pool.PoolJob(gt_file, [str(folder)], None, pool_plan="distributed"))
    largest = max((f.stat().st_size + 1) // 2 for f in folder.glob("*.csv"))
    assert bounds == [None if with_parquet else largest]
    assert counted == ([1] if with_parquet else [])
    for s in result.submissions:
        frame = subs[s.name]
        want = evaluate(frame.query_id, frame.reference_id, frame.score.to_numpy(), ground_truth())
        assert s.status == "ok" and s.metrics.to_dict() == want.to_dict(), s.name


@pytest.mark.parametrize(
    "seed,partitions,plan",
    [
        (1, 1, "distributed"),
        (2, 3, "distributed"),
        (3, 8, "distributed"),
        (1, 1, "per-file"),
        (4, 2, "auto"),
    ],
)
def test_pool_equals_each_submission_scored_alone(spark, tmp_path, gt_file, seed, partitions, plan):
    subs = write_pool(tmp_path / "pool", seed, 7)
    job = pool.PoolJob(
        gt_file, [str(tmp_path / "pool")], None, sort_partitions=partitions, pool_plan=plan
    )
    result = pool.run(spark, job)
    gt = ground_truth()
    assert [s.name for s in result.submissions] == sorted(subs)
    for s in result.submissions:
        frame = subs[s.name]
        assert s.status == "ok", s.reason
        want = evaluate(frame.query_id, frame.reference_id, frame.score.to_numpy(), gt)
        assert s.metrics.to_dict() == want.to_dict(), s.name
        assert np.array_equal(s.metrics.curve.recall, want.curve.recall)
        assert np.array_equal(s.metrics.curve.precision, want.curve.precision)


def test_one_table_with_a_submission_column_equals_the_files(spark, tmp_path, gt_file):
    subs = write_pool(tmp_path / "pool", 5, 5)
    table = pd.concat([f.assign(team=name) for name, f in subs.items()], ignore_index=True)
    table.to_parquet(tmp_path / "pool.parquet", index=False)
    by_files = pool.run(spark, pool.PoolJob(gt_file, [str(tmp_path / "pool" / "*")], None))
    by_table = pool.run(
        spark,
        pool.PoolJob(gt_file, [str(tmp_path / "pool.parquet")], None, submission_column="team"),
    )
    empty = [n for n, f in subs.items() if len(f) == 0]  # no row: not in the table
    assert [s.name for s in by_table.submissions] == [n for n in sorted(subs) if n not in empty]
    files = {s.name: s.metrics.to_dict() for s in by_files.submissions}
    for s in by_table.submissions:
        assert s.metrics.to_dict() == files[s.name]


def bad_pool(folder: Path) -> dict[str, str]:
    """One good submission and one of each kind of invalid one; name -> expected reason."""
    folder.mkdir()
    (folder / "good.csv").write_text("Q1,R1,0.9\nQ2,R2,0.8\nQ4,R4,0.7\n")
    (folder / "repeats.csv").write_text("Q1,R1,0.9\nQ2,R2,0.5\nQ1,R1,0.8\n")
    (folder / "nonfinite.csv").write_text("Q1,R1,0.9\nQ2,R2,inf\n")
    (folder / "toomany.csv").write_text("".join(f"Q1,R{i},0.5\n" for i in range(6)))
    (folder / "columns.csv").write_text("Q1,R1\n")
    pd.DataFrame({"query_id": ["Q1"], "ref": ["R1"], "score": [1.0]}).to_parquet(
        folder / "parquetcols.parquet"
    )
    (folder / "unreadable.csv.gz").write_bytes(gzip.compress(b"Q1,R1,0.5\n" * 50)[:30])
    return {
        "repeats": "lines 1 and 3: duplicate pair (Q1, R1) appears 2 times",
        "nonfinite": "line 2: score 'inf' is not finite",
        "toomany": "6 predictions, more than --max-results 5",
        "columns": "line 1: missing score (expected 3 fields",
        "parquetcols": "missing column 'reference_id'",
        "unreadable": "cannot be read as gzip (truncated: the compressed stream ends before",
    }


@pytest.mark.parametrize("plan", ["distributed", "per-file"])
def test_bad_submissions_are_marked_and_the_rest_scored(spark, tmp_path, gt_file, plan):
    expected = bad_pool(tmp_path / "pool")
    out = tmp_path / "out"
    job = pool.PoolJob(gt_file, [str(tmp_path / "pool")], str(out), max_results=5, pool_plan=plan)
    result = pool.run(spark, job)
    status = {s.name: s for s in result.submissions}
    assert status["good"].status == "ok" and status["good"].metrics.n_true_positives == 3
    for name, reason in expected.items():
        s = status[name]
        assert s.status == "invalid" and reason in s.reason, (name, s.reason)
        assert s.reason.startswith(str(tmp_path / "pool" / name)), s.reason
        assert "\n" not in s.reason
    rows = list(csv.DictReader((out / "leaderboard.csv").open()))
    assert [r["submission"] for r in rows] == ["good", *sorted(expected)]
    assert rows[0]["rank"] == "1" and rows[1]["rank"] == "" and rows[1]["status"] == "invalid"
    assert (out / "pr_curves" / "good.csv").exists() and (out / "pr_curves.png").exists()
    assert "| 1 | good | 0.115385 |" in (out / "leaderboard.md").read_text()


def test_cli_pool_exit_codes_with_and_without_fail_on_invalid(spark, tmp_path, gt_file, capsys):
    """The command's exit codes, run in this process on the suite's session (a job of its
    own JVM adds nothing here: test_cluster.py and test_determinism.py start those)."""

    bad_pool(tmp_path / "pool")
    common = [
        "evaluate",
        "--ground-truth",
        gt_file,
        "--predictions",
        str(tmp_path / "pool" / "*"),
        "--quiet",
    ]
    ok = in_process([*common, "--output", str(tmp_path / "a"), "--max-results", "5"], capsys, spark)
    assert ok.code == 0, ok.out + ok.err
    assert "7 submissions: 1 scored, 6 invalid" in ok.out
    strict = in_process(
        [*common, "--output", str(tmp_path / "b"), "--fail-on-invalid"], capsys, spark
    )
    assert strict.code == 2
    (line,) = [x for x in (strict.out + strict.err).splitlines() if x.startswith("error:")]
    pattern = str(tmp_path / "pool" / "*")
    assert line.startswith(
        f"error: {pattern}: 5 of 7 submissions invalid (--fail-on-invalid); first: columns: "
        f"{tmp_path / 'pool' / 'columns.csv'}: line 1: missing score"
    ), line
    assert not (tmp_path / "b").exists()


def leaderboard_rows(folder: Path) -> list[dict]:
    rows = json.loads((folder / "leaderboard.json").read_text())["submissions"]
    return [{k: v for k, v in r.items() if k != "reused"} for r in rows]


def test_incremental_run_equals_full_run(spark, tmp_path, gt_file):
    folder = tmp_path / "pool"
    subs = write_pool(folder, 11, 6)
    (folder / "bad.csv").write_text("Q1,R1,0.5\nQ1,R1,0.6\n")
    first = tmp_path / "first"
    # the first run by the distributed plan, the next ones per file: reuse is plan-blind
    pool.run(spark, pool.PoolJob(gt_file, [str(folder)], str(first), pool_plan="distributed"))
    # add one, change one, remove one
    random_submission(np.random.default_rng(99), 80).to_csv(folder / "newcomer.csv", index=False)
    changed = subs["team01"].assign(score=subs["team01"].score[::-1].to_numpy())
    changed.to_csv(folder / "team01.csv", index=False)
    (folder / "team03.csv").unlink()
    again = tmp_path / "again"
    result = pool.run(spark, pool.PoolJob(gt_file, [str(folder)], str(again), previous=str(first)))
    reused = {s.name for s in result.submissions if s.reused}
    assert reused == {"team 00", "team02", "team04", "team05", "bad"}
    full = tmp_path / "full"
    pool.run(spark, pool.PoolJob(gt_file, [str(folder)], str(full)))
    assert leaderboard_rows(again) == leaderboard_rows(full)
    for curve in (full / "pr_curves").iterdir():
        assert (again / "pr_curves" / curve.name).read_text() == curve.read_text()
    # another ground truth: nothing is reused
    other = tmp_path / "gt2.csv"
    GT.iloc[:30].to_csv(other, index=False)
    shutil.rmtree(again)
    result = pool.run(
        spark, pool.PoolJob(str(other), [str(folder)], str(again), previous=str(first))
    )
    assert not any(s.reused for s in result.submissions)


def test_two_files_with_one_name_and_single_file_stays_strict(spark, tmp_path, gt_file):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.csv").write_text("Q1,R1,0.5\n")
    (tmp_path / "b" / "x.csv").write_text("Q1,R1,0.5\n")
    with pytest.raises(InputError, match="two submissions would be named 'x'"):
        pool.run(spark, pool.PoolJob(gt_file, [str(tmp_path / "a"), str(tmp_path / "b")], None))

    def is_pool(path) -> bool:
        return engine.settle(spark, engine.Choice("spark"), [str(path)]).kind == "pool"

    assert not is_pool(tmp_path / "a" / "x.csv")
    assert is_pool(tmp_path / "a")
    # relative paths, as `make demo` gives one (relative to where Spark started)
    rel = Path(os.path.relpath(tmp_path))
    assert not is_pool(rel / "a" / "x.csv")
    assert is_pool(rel / "a")
    assert is_pool(rel / "a" / "*.csv")
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "part-00000.csv").write_text("Q1,R1,0.5\n")
    assert not is_pool(rel / "parts")


def test_plan_auto_goes_by_name_and_size_on_any_file_system(tmp_path):
    folder = tmp_path / "pool"
    write_pool(folder, 3, 3)
    files = [(str(p), p.stat().st_size) for p in sorted(folder.iterdir())]

    def plan(
        asked: str, limit: int | None, items=files, pool: bool = True, engine_asked="auto"
    ) -> str:
        choice = engine.Choice("spark", asked, engine_asked, local_max_bytes=limit)
        return engine.plan_of(choice, items, "auto", pool)[0]

    assert plan("auto", 1 << 20) == "per-file"
    assert plan("distributed", 1 << 20) == "distributed"
    assert plan("auto", 10) == "distributed"  # over the size
    assert plan("per-file", 10) == "per-file"  # size: auto's rule
    # the scheme decides nothing: files named through Hadoop are read through Spark
    remote = [(f"viewfs://pool/x/{Path(p).name}", size) for p, size in files]
    assert plan("auto", 1 << 20, remote) == "per-file"
    assert plan("auto", 1 << 20, [(remote[0][0], None)]) == "distributed"  # size unknown
    (folder / "z.csv.zst").write_bytes(b"")
    odd = [*files, (str(folder / "z.csv.zst"), 0)]
    assert plan("auto", 1 << 20, odd) == "distributed"
    with pytest.raises(InputError, match=r"--pool-plan per-file: .*z.csv.zst.*distributed"):
        plan("per-file", 1 << 20, odd)
    assert plan("auto", 1 << 20, [("table:t", None)]) == "distributed"
    # one submission: per-file when it fits, unless the Spark engine itself was asked for
    assert plan("auto", 1 << 20, files[:1], pool=False) == "per-file"
    assert plan("auto", 1 << 20, files[:1], pool=False, engine_asked="spark") == "distributed"
    assert plan("per-file", 1 << 20, files[:1], pool=False, engine_asked="spark") == "per-file"
    assert engine.plan_of(engine.LOCAL, odd)[0] == "per-file"
    # auto (None): a task's fixed share, whatever the driver's memory
    big = [(files[0][0], engine.TASK_MAX_BYTES + 1)]
    assert plan("auto", None, [(files[0][0], engine.TASK_MAX_BYTES)]) == "per-file"
    assert plan("auto", None, big) == "distributed"


def test_the_plan_s_old_name_still_works_for_one_release(capsys):
    """0.1.0's ``one-sort`` is the distributed plan: on the command line after one warning
    line, in the API and the job objects after a FutureWarning."""
    import argparse

    from disc21spark.commands.evaluate_options import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    capsys.readouterr()
    args = parser.parse_args(
        ["--ground-truth", "g.csv", "--output", "o", "--pool-plan", "one-sort"]
    )
    assert args.pool_plan == "distributed"
    assert capsys.readouterr().err == (
        "warning: the plan 'one-sort' is now called 'distributed' "
        "(the old name will be removed in the next release)\n"
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--ground-truth", "g.csv", "--output", "o", "--pool-plan", "one-pass"])
    with pytest.warns(FutureWarning, match="'one-sort' is now called 'distributed'"):
        assert engine.Choice("spark", "one-sort").plan == "distributed"
    with pytest.warns(FutureWarning):
        choice = engine.choose(["a.csv", "b.csv"], plan="one-sort")
    assert (choice.engine, choice.plan) == ("spark", "distributed")


def test_odd_parquet_types_send_the_pool_to_the_distributed_plan(spark, tmp_path, gt_file):
    """Integer ids: Arrow and Spark read them differently, so Spark reads the pool."""
    folder = tmp_path / "pool"
    folder.mkdir()
    (folder / "plain.csv").write_text("Q1,R1,0.9\nQ2,R2,0.8\n")
    pd.DataFrame({"query_id": [1], "reference_id": [1], "score": [0.5]}).to_parquet(
        folder / "ints.parquet"
    )
    subs = [Submission("ints", str(folder / "ints.parquet"))]
    path = subs[0].source
    source = Source.of_bytes(path, Path(path).read_bytes(), resolve(path))
    assert per_file.task_outcome(source, ground_truth(), Settings(10, 10)).needs_spark
    result = pool.run(spark, pool.PoolJob(gt_file, [str(folder)], None, pool_plan="auto"))
    by_name = {s.name: s for s in result.submissions}
    sources = [(s.source, 1) for s in result.submissions]
    assert engine.plan_of(engine.Choice("spark"), sources)[0] == "distributed"
    assert by_name["plain"].metrics.n_true_positives == 2
    assert by_name["ints"].status == "ok" and by_name["ints"].metrics.n_predictions == 1


def test_a_task_failing_once_is_retried_and_changes_nothing(spark, tmp_path, gt_file):
    """A task of the per-file plan fails on its first attempt (a test-only fault): Spark
    retries it (local[2,3]: three attempts) and the leaderboard equals an undisturbed run's
    (the suite's session's)."""

    write_pool(tmp_path / "pool", 21, 5)
    marker = tmp_path / "failed.txt"
    common = [
        "--ground-truth",
        gt_file,
        "--predictions",
        str(tmp_path / "pool"),
        "--quiet",
        "--pool-plan",
        "per-file",
    ]
    succeed(spark, ["evaluate", *common, "--output", str(tmp_path / "calm")])
    common += ["--master", "local[2,3]"]
    env = dict(os.environ, **{faults.FAIL_FIRST_ATTEMPT: f"2:{marker}"})
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "jobs" / "evaluate.py"),
            *common,
            "--output",
            str(tmp_path / "faulty"),
        ],
        capture_output=True,
        text=True,
        env={**cli_env(), **env},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert marker.read_text() == "2\n"  # the fault happened, once
    assert leaderboard_rows(tmp_path / "faulty") == leaderboard_rows(tmp_path / "calm")


def test_a_pool_named_through_viewfs_takes_the_per_file_plan_with_the_local_figures(
    spark, tmp_path, gt_file
):
    folder = tmp_path / "pool"
    write_pool(folder, 8, 7)  # CSV with and without header, Parquet, empty files
    (folder / "zipped.csv.gz").write_bytes(gzip.compress(b"Q1,R1,0.9\nQ2,R2,0.5\nQ7,R1,0.5\n"))
    (folder / "repeats.csv").write_text("Q1,R1,0.9\nQ2,R2,0.5\nQ1,R1,0.8\n")
    remote = mount(spark, folder)
    here, there = tmp_path / "here", tmp_path / "there"
    pool.run(spark, pool.PoolJob(gt_file, [str(folder)], str(here), pool_plan="per-file"))
    result = pool.run(spark, pool.PoolJob(gt_file, [remote], str(there)))
    assert all(s.source.startswith(f"{remote}/") for s in result.submissions)
    # the per-file plan only: one scoring phase, no sort of the rows
    phases = json.loads((there / "leaderboard.json").read_text())["run"]["phase_seconds"]
    assert "score" in phases and "count" not in phases and "read" not in phases, phases
    for name in ("leaderboard.csv", "leaderboard.md"):
        local_text = (here / name).read_text().replace(str(folder), remote)
        assert (there / name).read_text() == local_text, name
    assert leaderboard_rows(there) == [
        {**r, "reason": r["reason"] and r["reason"].replace(str(folder), remote)}
        for r in leaderboard_rows(here)
    ]
    curves = sorted(p.name for p in (here / "pr_curves").iterdir())
    assert curves == sorted(p.name for p in (there / "pr_curves").iterdir()) and curves
    for curve in curves:
        assert (there / "pr_curves" / curve).read_bytes() == (
            here / "pr_curves" / curve
        ).read_bytes()
    bad = {s.name: s.reason for s in result.submissions}["repeats"]
    assert bad.startswith(f"{remote}/repeats.csv: lines 1 and 3: duplicate pair (Q1, R1) appears 2")


def test_one_submission_through_viewfs_is_scored_in_one_task_as_the_local_file(
    spark, tmp_path, gt_file
):
    from disc21spark.matching.job import MatchingJob
    from disc21spark.matching.job import run as run_one

    folder = tmp_path / "one"
    frame = write_pool(folder, 9, 2)["team01"]
    remote = mount(spark, folder)
    auto = engine.choose([f"{remote}/team01.csv"], gt_file)
    assert (auto.engine, auto.plan, auto.asked, auto.kind) == ("spark", "auto", "auto", None)
    assert auto.reasons == (f"{remote}/team01.csv: not one local file",)
    settled = engine.settle(spark, auto, [f"{remote}/team01.csv"])
    assert (settled.kind, settled.plan) == ("one submission", "per-file")
    got = run_one(
        spark, MatchingJob(gt_file, f"{remote}/team01.csv", str(tmp_path / "o"), choice=auto)
    )
    want = evaluate(frame.query_id, frame.reference_id, frame.score.to_numpy(), ground_truth())
    assert got.to_dict() == want.to_dict()
    assert np.array_equal(got.curve.precision, want.curve.precision)
    phases = json.loads((tmp_path / "o" / "metrics.json").read_text())["run"]["phase_seconds"]
    assert "count" not in phases and "read" not in phases, phases
    (folder / "bad.csv").write_text("Q1,R1,0.5\nQ2,R2,nan\n")
    with pytest.raises(InputError) as info:
        run_one(spark, MatchingJob(gt_file, f"{remote}/bad.csv", None, choice=auto))
    with pytest.raises(InputError) as spread:
        run_one(spark, MatchingJob(gt_file, f"{remote}/bad.csv", None))  # the distributed plan
    assert (
        str(info.value)
        == str(spread.value)
        == f"{remote}/bad.csv: line 2: score 'nan' is not finite"
    )
