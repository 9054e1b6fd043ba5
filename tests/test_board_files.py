"""Boards an organiser names (--previous, --compare-to) on real boards: a board says which
it is and a run takes only one of the right kind, nothing private is published whatever
is compared, the split's digest on the published board is keyed, "up to date" means
every input's content and both outputs whole, and a malformed board file is one line
before anything is written. One module scene: a split run and an unsplit one."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import gt_csv, make_gt, random_submission
from tests.running import in_process

SETTINGS = dict(pool_plan="distributed", max_results=0, resamples=20, seed=3)
OPTIONS = ["--max-results", "0", "--resamples", "20", "--seed", "3", "--quiet"]


def pool_run(spark, d: Path, out: str, private: str | None = None, **more):
    from disc21spark.pool import job as pool_job

    split = {"private_queries": str(d / "split.csv"), "private_output": str(d / (private or ""))}
    job = pool_job.PoolJob(
        str(d / "gt.csv"),
        [str(d / "pool")],
        str(d / out),
        **SETTINGS,
        **(split if private else {}),
        **more,
    )
    return pool_job.run(spark, job, announce=False)


@pytest.fixture(scope="module")
def organiser(spark, tmp_path_factory) -> Path:
    """gt.csv (30 queries), pool/ (three teams), split.csv (every third query private),
    groups.csv; pubA/privA a split run's boards, plainA an unsplit run's."""
    d = tmp_path_factory.mktemp("organiser")
    gt = make_gt(30, 20)
    rng = np.random.default_rng(5)
    (d / "pool").mkdir()
    for i in range(3):
        random_submission(rng, gt, 150, 9).to_csv(d / "pool" / f"team{i}.csv", index=False)
    gt_csv(d / "gt.csv", gt)
    (d / "split.csv").write_text("query_id\n" + "".join(f"{q}\n" for q in gt.query_ids[::3]))
    groups = "".join(f"{q},{'ab'[i % 2]}\n" for i, q in enumerate(gt.query_ids))
    (d / "groups.csv").write_text("query_id,group\n" + groups)
    pool_run(spark, d, "pubA", private="privA")
    pool_run(spark, d, "plainA")
    return d


def command(d: Path, out: Path, *extra: str, split: Path | None = None) -> list[str]:
    args = ["evaluate", "--ground-truth", str(d / "gt.csv"), "--predictions", str(d / "pool")]
    args += ["--output", str(out), *OPTIONS, *extra]
    if split is not None:
        args += ["--private-queries", str(d / "split.csv"), "--private-output", str(split)]
    return args


def board_rows(folder: Path) -> list[dict]:
    return json.loads((folder / "leaderboard.json").read_text())["submissions"]


def published_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_private_board_is_never_previous_and_is_compared_beside_the_private_board(
    spark, organiser, tmp_path, capsys
):
    d = organiser
    out, hidden = tmp_path / "pubB", tmp_path / "privB"
    screen = in_process(
        command(d, out, "--previous", str(d / "privA"), split=hidden), capsys, spark
    )
    assert (screen.code, screen.err.strip().splitlines()[-1]) == (
        2,
        f"error: --previous {d / 'privA'}: a private board, and this run publishes a public "
        "one: --previous takes the published board of an earlier run of the same kind (a "
        "private board is never reused: it is rescored every run)",
    )
    assert not out.exists() and not hidden.exists()
    # a private board compared to: changes.csv beside the private board, never published
    screen = in_process(
        command(d, out, "--compare-to", str(d / "privA"), split=hidden), capsys, spark
    )
    assert screen.code == 0, screen.err
    assert (hidden / "changes.csv").exists() and not (out / "changes.csv").exists()
    assert json.loads((hidden / "leaderboard.json").read_text())["run"]["compared_to"] == str(
        d / "privA"
    )
    assert "compared_to" not in json.loads((out / "leaderboard.json").read_text())["run"]
    # the published board is the one a run without --compare-to publishes, file for file
    assert sorted(published_bytes(out)) == sorted(published_bytes(d / "pubA"))
    assert board_rows(out) == board_rows(d / "pubA")


def test_the_published_board_lets_no_reader_test_a_guess_of_the_split(spark, organiser, tmp_path):
    d = organiser
    plain = hashlib.sha256((d / "split.csv").read_bytes()).hexdigest()
    for name, data in published_bytes(d / "pubA").items():
        assert plain.encode() not in data, name
    public = json.loads((d / "pubA" / "leaderboard.json").read_text())["run"]
    private = json.loads((d / "privA" / "leaderboard.json").read_text())["run"]
    assert (public["board"], private["board"]) == ("public", "private")
    assert public["private_queries_sha256"] is None and private["private_queries_sha256"] == plain
    assert "private_queries_key" not in public
    key = bytes.fromhex(private["private_queries_key"])
    keyed = hmac.new(key, plain.encode(), hashlib.sha256).hexdigest()
    assert public["private_queries_hmac_sha256"] == keyed
    assert json.loads((d / "plainA" / "leaderboard.json").read_text())["run"]["board"] == "unsplit"
    # the split edited: the keyed digest changes, nothing of the public board is reused
    shutil.copytree(d / "pool", tmp_path / "pool")
    (tmp_path / "gt.csv").write_bytes((d / "gt.csv").read_bytes())
    (tmp_path / "split.csv").write_text((d / "split.csv").read_text() + "Q001\n")
    again = pool_run(spark, tmp_path, "pubB", private="privB", previous=str(d / "pubA"))
    assert not any(s.reused for s in again.submissions)


def test_an_edited_input_or_a_missing_private_board_is_never_up_to_date(
    spark, organiser, tmp_path, capsys
):
    d = tmp_path / "inputs"
    shutil.copytree(organiser, d, ignore=shutil.ignore_patterns("pub*", "priv*", "plain*"))
    out, hidden = tmp_path / "pub", tmp_path / "priv"
    args = command(d, out, "--query-groups", str(d / "groups.csv"), split=hidden)
    assert in_process(args, capsys, spark).code == 0
    # the published run.json names the split by its path alone; the private one by content
    plain = hashlib.sha256((d / "split.csv").read_bytes()).hexdigest()
    assert not [name for name, data in published_bytes(out).items() if plain.encode() in data]
    assert plain in (hidden / "run.json").read_text()
    one = tmp_path / "one"
    single = [*command(d, one, "--query-groups", str(d / "groups.csv"))]
    single[single.index(str(d / "pool"))] = str(d / "pool" / "team0.csv")
    assert in_process(single, capsys, spark).code == 0

    def up_to_date(argv: list[str]) -> bool:
        screen = in_process(argv, capsys, None)  # decided before Spark starts
        assert screen.code in (0, 2), screen.err
        return screen.code == 0 and "up to date" in screen.out

    assert up_to_date(args) and up_to_date(single)
    for path, edit in (
        (d / "split.csv", lambda text: text + "Q002\n"),
        (d / "groups.csv", lambda text: text.replace(",a\n", ",c\n")),
    ):
        kept = path.read_text()
        path.write_text(edit(kept))
        assert not up_to_date(args), path
        if path.name == "groups.csv":
            assert not up_to_date(single)
        path.write_text(kept)  # the same content again: up to date, whatever its time
        assert up_to_date(args) and up_to_date(single)
    shutil.rmtree(hidden)
    assert not up_to_date(args)


def test_malformed_replicates_of_the_previous_board_are_one_line_before_anything_is_written(
    spark, organiser, tmp_path, capsys
):
    d = organiser
    previous = tmp_path / "previous"
    shutil.copytree(d / "pubA", previous)
    np.save(previous / "resamples" / "team1.npy", np.zeros((4, 5)))
    out, hidden = tmp_path / "pubB", tmp_path / "privB"
    screen = in_process(command(d, out, "--previous", str(previous), split=hidden), capsys, spark)
    assert (screen.code, screen.err.strip().splitlines()[-1]) == (
        2,
        f"error: --previous {previous}/resamples/team1.npy: not replicates this tool wrote "
        "(float64 (4, 5); float64 (4, 20) expected)",
    )
    assert not out.exists() and not hidden.exists()


def test_missing_replicates_of_the_previous_board_are_one_line(spark, organiser, tmp_path, capsys):
    """A --previous board whose resamples/ is gone, or a dangling symlink (found by the
    organiser fuzzer): its intervals were reused without replicates, and the published
    figures differed from a fresh run's. One line instead, nothing written."""
    d = organiser
    for name, damage in (("gone", shutil.rmtree), ("dangling", _dangling)):
        previous = tmp_path / name
        shutil.copytree(d / "pubA", previous)
        damage(previous / "resamples")
        out, hidden = tmp_path / f"pub-{name}", tmp_path / f"priv-{name}"
        args = command(d, out, "--previous", str(previous), split=hidden)
        screen = in_process(args, capsys, spark)
        assert (screen.code, screen.err.strip().splitlines()[-1]) == (
            2,
            f"error: --previous {previous}/resamples/team0.npy: missing, or not a file (the "
            "board was scored with --resamples 20)",
        ), name
        assert not out.exists() and not hidden.exists()


def _dangling(folder: Path) -> None:
    shutil.rmtree(folder)
    folder.symlink_to(folder.with_name("nowhere"))
