"""disc21spark freeze: a published board copied whole to a new folder with FROZEN.json,
which no run replaces; a retried freeze finds its copy; bad boards and taken folders
end in one line, exit 2, with nothing written. No Spark: the board is a folder."""

from __future__ import annotations

import json

from disc21spark.commands import main


def a_board(folder, teams: int = 2):
    folder.mkdir(parents=True)
    run = {"ground_truth_sha256": "abc", "board": "private"}
    subs = [{"submission": f"team{i}", "rank": i + 1} for i in range(teams)]
    (folder / "leaderboard.json").write_text(json.dumps({"run": run, "submissions": subs}))
    (folder / "leaderboard.csv").write_text("rank,submission\n1,team0\n2,team1\n")
    (folder / "pr_curves").mkdir()
    (folder / "pr_curves" / "team0.csv").write_text("precision,recall\n")
    return folder


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
        "leaderboard.csv",
        "leaderboard.json",
        "pr_curves",
        "pr_curves/team0.csv",
    ]
    doc = json.loads((tmp_path / "official" / "FROZEN.json").read_text())
    assert (doc["board"], doc["submissions"], doc["ground_truth_sha256"]) == ("private", 2, "abc")
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
        ("broken", "copy"): "error: broken/leaderboard.json: not a leaderboard this tool wrote "
        "(JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
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
