"""disc21spark freeze: a published board copied whole to a new folder with FROZEN.json,
which no run replaces; a retried freeze finds its copy; bad boards and taken folders
end in one line, exit 2, with nothing written. No Spark: the board is a folder."""

from __future__ import annotations

import json

import pytest

from disc21spark import freeze_board
from disc21spark.commands import main
from disc21spark.core.errors import InputError, OutputError
from tests.pool_helpers import published_board


def a_board(folder, teams: int = 2):
    return published_board(folder, board="private", teams=teams)


def errors(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]


def test_freeze_copies_a_board_that_no_run_then_replaces(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a_board(tmp_path / "board")
    assert main(["freeze", "--board", "board", "--output", "official", "--quiet"]) == 0
    assert "board frozen in" in capsys.readouterr().out
    copied = sorted(
        p.relative_to(tmp_path / "official").as_posix() for p in (tmp_path / "official").rglob("*")
    )
    assert copied == [
        "FROZEN.json",
        "_SUCCESS",
        "leaderboard.csv",
        "leaderboard.html",
        "leaderboard.json",
        "pr_curves",
        "pr_curves/team0.csv",
        "run.json",
    ]
    doc = json.loads((tmp_path / "official" / "FROZEN.json").read_text())
    assert (doc["board"], doc["submissions"], doc["ground_truth_sha256"]) == (
        "private",
        2,
        "a" * 64,
    )
    assert doc["copied_from"] == str(tmp_path / "board")
    # a retried freeze finds its copy; a run never replaces it, not even with --overwrite
    assert main(["freeze", "--board", "board", "--output", "official", "--quiet"]) == 0
    args = ["evaluate", "--ground-truth", "gt.csv", "--predictions", "a.csv", "b.csv"]
    assert main([*args, "--output", "official", "--overwrite", "--quiet"]) == 2
    assert errors(capsys) == [
        "error: official: a frozen board, which no run replaces (not even with --overwrite); "
        "write the rescored board beside it: --output ANOTHER --compare-to official"
    ]


def test_bad_boards_and_taken_folders_end_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a_board(tmp_path / "board")
    (tmp_path / "taken").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "leaderboard.json").write_text("{not json")
    cases = {
        ("missing", "copy"): "error: missing: no such folder",
        (
            "empty",
            "copy",
        ): "error: empty: no leaderboard.json there: not a board a pool run published",
        ("broken", "copy"): "error: broken: no _SUCCESS, run.json, leaderboard.csv, pr_curves "
        "there: not a board a pool run published whole",
        ("board", "taken"): "error: taken: exists (a frozen board is copied to a new folder)",
        ("board", "board/inside"): "error: --output board/inside is inside --board board: a "
        "run never replaces or writes into a path it reads",
        ("board", "nowhere/copy"): f"error: {tmp_path / 'nowhere'}: parent folder does not exist",
    }
    for (board, output), message in cases.items():
        assert main(["freeze", "--board", board, "--output", output, "--quiet"]) == 2, board
        assert errors(capsys) == [message]
    assert not (tmp_path / "copy").exists() and not list((tmp_path / "taken").iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_a_half_written_or_not_our_board_is_refused_naming_what_is_wrong(tmp_path, capsys):
    """A board without one of its parts, a leaderboard.json that is minimal, mistyped or
    not UTF-8: one line naming the folder or file and the reason, nothing copied."""
    cases = {}
    for part in ("_SUCCESS", "run.json", "leaderboard.csv"):
        (published_board(tmp_path / f"no-{part}") / part).unlink()
        cases[f"no-{part}"] = f"no {part} there: not a board a pool run published whole"
    (published_board(tmp_path / "no-curves") / "pr_curves" / "team0.csv").unlink()
    (tmp_path / "no-curves" / "pr_curves").rmdir()
    cases["no-curves"] = "no pr_curves there: not a board a pool run published whole"
    docs = {
        "minimal": ({"run": {}, "submissions": []}, "no submissions"),
        "no-truth": (
            {"run": {}, "submissions": [{"submission": "a", "status": "invalid"}]},
            "the run block names no ground_truth_sha256",
        ),
        "text-ap": (None, "submission 1: micro_ap is '0.5', not a number"),
    }
    for name, (doc, why) in docs.items():
        board = published_board(tmp_path / name)
        if doc is None:
            doc = json.loads((board / "leaderboard.json").read_text())
            doc["submissions"][0]["micro_ap"] = "0.5"
        (board / "leaderboard.json").write_text(json.dumps(doc))
        cases[f"{name}/leaderboard.json"] = f"not a leaderboard this tool wrote ({why})"
    (published_board(tmp_path / "latin") / "leaderboard.json").write_bytes(b'{"run": "\xe9"}')
    for name, reason in cases.items():
        folder = name.split("/")[0]
        code = main(["freeze", "--board", str(tmp_path / folder), "--output", str(tmp_path / "x")])
        assert code == 2, name
        assert errors(capsys) == [f"error: {tmp_path / name}: {reason}"]
        with pytest.raises(InputError, match="not a board|not a leaderboard"):
            freeze_board(tmp_path / folder, tmp_path / "x")
    assert main(["freeze", "--board", str(tmp_path / "latin"), "--output", str(tmp_path / "x")])
    assert errors(capsys)[0].startswith(
        f"error: {tmp_path / 'latin' / 'leaderboard.json'}: not a leaderboard this tool wrote "
        "(UnicodeDecodeError: "
    )
    assert not (tmp_path / "x").exists()


def test_a_leaderboard_nested_past_the_stack_is_one_line(tmp_path, capsys):
    """100,000 arrays in arrays (found by the organiser fuzzer): json's RecursionError
    was an internal error; it is a board that is not ours, in one line, nothing copied."""
    board = published_board(tmp_path / "deep")
    (board / "leaderboard.json").write_text("[" * 100_000 + "]" * 100_000)
    code = main(["freeze", "--board", str(board), "--output", str(tmp_path / "x")])
    assert code == 2
    assert errors(capsys) == [
        f"error: {board / 'leaderboard.json'}: not a leaderboard this tool wrote "
        "(nested too deeply to be a leaderboard)"
    ]
    with pytest.raises(InputError, match="nested too deeply"):
        freeze_board(board, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_a_changed_board_frozen_again_to_the_same_folder_is_refused(tmp_path):
    board = published_board(tmp_path / "board", board="public")
    assert freeze_board(board, tmp_path / "official") == tmp_path / "official"
    assert freeze_board(board, tmp_path / "official") == tmp_path / "official"  # a retry
    kept = (tmp_path / "official" / "leaderboard.csv").read_bytes()
    (board / "leaderboard.csv").write_text("rank,submission\n1,team1\n2,team0\n")
    with pytest.raises(OutputError) as refused:
        freeze_board(board, tmp_path / "official")
    assert str(refused.value) == (
        f"{tmp_path / 'official'}: exists and holds a frozen copy of an earlier state of "
        f"{board} (freeze it again to a new folder)"
    )
    assert (tmp_path / "official" / "leaderboard.csv").read_bytes() == kept
