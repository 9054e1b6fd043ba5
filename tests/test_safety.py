"""Safety (issue 16): nothing written outside --output, nothing replaced without
--overwrite, no code loaded from data files, ids escaped where they are written."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.bad_input import CASES
from tests.bad_inputs import CLEAN_COLUMNS, GT
from tests.conftest import ROOT
from tests.running import NoCapture, in_process, snapshot

PACKAGE = ROOT / "disc21spark"


def code_lines(path: Path) -> list[tuple[int, str]]:
    """Source lines without comments or docstring-only lines (what runs)."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("#", 1)[0]
        if code.strip():
            out.append((number, code))
    return out


# what turns a data file into code: unpickling, evaluating text, loading a module by name
FORBIDDEN = re.compile(
    r"\bpickle\b|\bcloudpickle\b|\bdill\b|\bmarshal\b|\bshelve\b|(?<![.\w])eval\(|(?<![.\w])exec\("
    r"|allow_pickle\s*=\s*True|yaml\.load\(|\b__import__\(|runpy|import_module\("
)


def test_no_code_is_loaded_from_data_files():
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {code.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, code in code_lines(path)
        if FORBIDDEN.search(code)
    ]
    # the one import by name: a user's descriptor (module:function) named on the command
    # line, by --method or --descriptors, never a name read from a file
    assert len(hits) == 1 and hits[0].startswith("disc21spark/ranks/methods.py:"), hits
    assert hits[0].endswith("importlib.import_module(module_name)"), hits
    callers = [
        str(path.relative_to(ROOT))
        for path in sorted(PACKAGE.rglob("*.py"))
        if re.search(r"\b\w*methods\.method\(", path.read_text())
    ]
    assert callers == ["disc21spark/ranks/extract_job.py", "disc21spark/ranks/job.py"], callers
    for caller in callers:  # each passes the command line's name: the job's field
        text = (ROOT / caller).read_text()
        calls = re.findall(r"\w*methods\.method\(([^)]*)\)", text)
        assert calls and set(calls) <= {"self.method", "job.method", "name"}, (caller, calls)


class Planted:
    """Unpickling this would leave a file: the proof that a data file ran code."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self):
        return (Path.touch, (Path(self.target),))


def test_a_pickled_npy_runs_nothing(spark, tmp_path, capsys):
    sentinel = tmp_path / "ran"
    np.save(tmp_path / "r.npy", np.array([Planted(str(sentinel))], dtype=object), allow_pickle=True)
    (tmp_path / "r_ids.txt").write_text("R1\n")
    import h5py

    with h5py.File(tmp_path / "q.h5", "w") as f:
        f["vectors"] = np.ones((1, 4), dtype=np.float32)
        f.create_dataset("image_names", data=["Q1"], dtype=h5py.string_dtype())
    (tmp_path / "gt.csv").write_text("Q1,R1\n")
    screen = in_process(
        [
            "evaluate",
            "--ground-truth",
            str(tmp_path / "gt.csv"),
            "--query-descriptors",
            str(tmp_path / "q.h5"),
            "--reference-descriptors",
            str(tmp_path / "r.npy"),
            "--knn",
            "1",
            "--output",
            str(tmp_path / "out"),
        ],
        capsys,
        spark,
    )
    assert screen.code == 2 and not sentinel.exists() and not (tmp_path / "out").exists()
    assert re.fullmatch(
        rf"error: {re.escape(str(tmp_path))}/r\.npy: cannot be read as \.npy .+\n",
        screen.err.splitlines(keepends=True)[-1],
    )


def test_every_command_keeps_a_non_empty_output_without_overwrite():
    """The matrix runs each command at a non-empty --output without --overwrite (and
    checks the folder byte for byte); here, that none is missing."""
    from disc21spark.commands import COMMANDS

    covered = {c.command[0] for c in CASES if c.id.endswith("-output-not-empty")}
    assert covered == set(COMMANDS)
    tracks = {c.id for c in CASES if c.id.endswith("-output-not-empty")}
    assert {
        "evaluate-output-not-empty",
        "pool-output-not-empty",
        "descriptors-output-not-empty",
        "extract-bench-output-not-empty",
    } <= tracks


def run_pool(spark, tmp_path, capsys, names: list[str]):
    """A one-table pool whose submissions are named ``names`` (data, not code)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(CLEAN_COLUMNS["score"])
    team = [names[i % len(names)] for i in range(n)]
    pq.write_table(pa.table({**CLEAN_COLUMNS, "team": team}), tmp_path / "p.parquet")
    (tmp_path / "gt.csv").write_text(GT)
    work = tmp_path / "cwd"
    work.mkdir()
    before = snapshot(tmp_path)
    import os

    old = os.getcwd()
    os.chdir(work)  # a relative write would land here
    try:
        screen = in_process(
            [
                "evaluate",
                "--ground-truth",
                str(tmp_path / "gt.csv"),
                "--predictions",
                str(tmp_path / "p.parquet"),
                "--submission-column",
                "team",
                "--output",
                str(tmp_path / "out"),
            ],
            capsys,
            spark,
        )
    finally:
        os.chdir(old)
    after = {
        k: v for k, v in snapshot(tmp_path).items() if not (k == "out" or k.startswith("out/"))
    }
    assert after == before, "written outside --output"
    return screen


def test_a_path_for_a_name_is_refused(spark, tmp_path, capsys):
    """The issue's id: its '/' would make pr_curves/<name>.csv a path; refused in one line."""
    screen = run_pool(spark, tmp_path, capsys, ["a", "=cmd|' /C calc'!A0"])
    assert screen.code == 2 and not (tmp_path / "out").exists()
    assert "cannot name a file" in screen.err


FORMULA = "=cmd|' -C calc'!A0"


@pytest.fixture(scope="module")
def formula_pool(spark, tmp_path_factory):
    import io

    tmp = tmp_path_factory.mktemp("formula")

    import contextlib
    import sys

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        screen = run_pool(spark, tmp, NoCapture(), ["plain", FORMULA, "a|b"])
    assert screen.code == 0, err.getvalue()
    assert sys.stdout is not None
    return tmp / "out"


def test_ids_stay_data_in_the_json(formula_pool):
    doc = json.loads((formula_pool / "leaderboard.json").read_text())
    assert {r["submission"] for r in doc["submissions"]} == {"plain", FORMULA, "a|b"}
    assert (formula_pool / "pr_curves" / f"{FORMULA}.csv").is_file()


def test_a_formula_id_is_not_a_formula_in_leaderboard_csv(formula_pool):
    with (formula_pool / "leaderboard.csv").open(newline="") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    # a spreadsheet evaluates a cell that starts with = + - @ (or a tab/CR before them)
    assert not [
        c
        for c in cells
        if c.lstrip("\t\r").startswith(("=", "+", "@"))
        or (c.startswith("-") and not re.fullmatch(r"-[\d.e+-]+", c))
    ]
    assert any(FORMULA in c for c in cells)


def test_a_pipe_in_an_id_does_not_break_leaderboard_md(formula_pool):
    rows = [
        line
        for line in (formula_pool / "leaderboard.md").read_text().splitlines()
        if line.startswith("|")
    ]
    widths = {len(re.findall(r"(?<!\\)\|", line)) for line in rows}
    assert len(widths) == 1, rows  # every row has the header's cells
