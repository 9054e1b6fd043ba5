"""Nothing the user had is lost, a frozen board stays frozen (issue 44, defects 4 and 5):
held over every command of ``disc21spark.commands`` and both pool plans, not case by case.

For each command line below, every output option is pointed at each path the command
reads (the path itself, the folder holding it, a folder inside it) and at a frozen board
(the board, a folder inside it, a folder holding it), with and without --overwrite. Each
run must end with exit 2 and one line, before Spark starts, and leave every file of the
case's folder byte for byte as it was. The refusal comes before any work
(``core/keep.py``), so these run in the suite's process in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import disc21spark as ds
from disc21spark.commands import COMMANDS
from disc21spark.core import lock
from disc21spark.core.errors import OutputError
from disc21spark.core.output import check_writable
from tests.pool_helpers import published_board
from tests.running import in_process, snapshot

NEVER = "a run never replaces or writes into a path it reads"
BOARD = '{"run": {}, "submissions": []}'


@dataclass(frozen=True)
class Line:
    """One command line: its fixed options, the paths it reads (option → the input's
    path below the case folder; a name ending in ``/`` is a folder) and its outputs
    (option → path)."""

    name: str
    command: list[str]
    reads: dict[str, str]
    writes: dict[str, str]

    @property
    def overwrite(self) -> bool:
        fields = COMMANDS[self.command[0]].REQUEST.__dataclass_fields__
        return "overwrite" in fields

    def argv(self, d: Path, writes: dict[str, str], overwrite: bool) -> list[str]:
        args = [*self.command]
        for option, path in self.reads.items():
            args += [option, str(d / path.rstrip("/"))]
        for option, path in {**self.writes, **writes}.items():
            args += [option, path if path.startswith(("/", "file:")) else str(d / path)]
        return [*args, "--overwrite"] if overwrite else args


def pool_line(plan: str) -> Line:
    return Line(
        f"pool-{plan}",
        ["evaluate", "--pool-plan", plan, "--engine", "spark"],
        {
            "--ground-truth": "gt/gt.csv",
            "--predictions": "preds/pool/",
            "--query-groups": "groups/groups.csv",
            "--private-queries": "split/split.csv",
            "--previous": "boards/previous/",
            "--compare-to": "compared/board/",
        },
        {"--output": "out", "--private-output": "private"},
    )


LINES = [
    Line(
        "evaluate",
        ["evaluate"],
        {"--ground-truth": "gt/gt.csv", "--predictions": "preds/p.csv"},
        {"--output": "out"},
    ),
    pool_line("per-file"),
    pool_line("distributed"),
    Line(
        "descriptors",
        ["evaluate"],
        {
            "--ground-truth": "gt/gt.csv",
            "--query-descriptors": "q/q.h5",
            "--reference-descriptors": "r/r.h5",
            "--score-norm-descriptors": "norm/n.h5",
        },
        {"--output": "out"},
    ),
    Line("freeze", ["freeze"], {"--board": "boards/board/"}, {"--output": "copy"}),
    Line("make-library", ["make-library", "--size", "3"], {}, {"--output": "out"}),
    Line("make-queries", ["make-queries"], {"--images": "images/lib/"}, {"--output": "out"}),
    Line(
        "extract",
        ["extract", "--method", "colorhist"],
        {"--images": "images/lib/"},
        {"--output": "v.h5"},
    ),
    Line(
        "extract-bench",
        ["extract", "--method", "tiny"],
        {"--bench": "b/bench/"},
        {"--output": "out"},
    ),
    Line(
        "rank-eval",
        ["rank-eval", "--methods", "tiny"],
        {"--bench": "b/bench/"},
        {"--output": "out"},
    ),
]


def test_the_lines_cover_every_command():
    assert {line.command[0] for line in LINES} == set(COMMANDS)


def lay_out(d: Path, line: Line) -> None:
    """The case folder: each input (placeholder bytes: nothing reads them before the
    refusal), and a frozen board in a folder of its own."""
    for path in line.reads.values():
        where = d / path.rstrip("/")
        if path.endswith("/"):
            where.mkdir(parents=True)
            (where / "a.csv").write_text("the user's own file\n")
            (where / "leaderboard.json").write_text(BOARD)
        else:
            where.parent.mkdir(parents=True)
            where.write_text("the user's own file\n")
    (d / "shelf" / "official").mkdir(parents=True)
    (d / "shelf" / "official" / "leaderboard.json").write_text(BOARD)
    (d / "shelf" / "official" / "FROZEN.json").write_text("{}")


def relations(line: Line) -> list[tuple[str, str, str, str]]:
    """(output option, read option, relation, path): each output at each input."""
    found = []
    for w_option in line.writes:
        for r_option, path in line.reads.items():
            path = path.rstrip("/")
            found += [
                (w_option, r_option, "is", path),
                (w_option, r_option, "holds", path.rsplit("/", 1)[0]),
                (w_option, r_option, "is inside", f"{path}/sub"),
            ]
    return found


def cases() -> list:
    params = []
    for line in LINES:
        for w_option, r_option, relation, path in relations(line):
            for overwrite in (False, True) if line.overwrite else (False,):
                params.append(
                    pytest.param(
                        line,
                        w_option,
                        path,
                        overwrite,
                        f"{r_option} {{d}}/{line.reads[r_option].rstrip('/')}",
                        relation,
                        id=f"{line.name}{w_option}-{relation.replace(' ', '-')}{r_option}"
                        + ("-overwrite" if overwrite else ""),
                    )
                )
    return params


def run_refused(line: Line, d: Path, writes: dict[str, str], overwrite: bool, capsys) -> str:
    """Run ``line`` with ``writes`` in the case folder ``d``: exit 2, one line, no Spark
    started, no file changed or added anywhere in ``d``; the line."""
    lay_out(d, line)
    before = snapshot(d)
    screen = in_process(line.argv(d, writes, overwrite), capsys, None)
    lines = [x for x in screen.text.splitlines() if "error: " in x]
    assert screen.code == 2, screen.text
    assert len(lines) == 1, screen.text
    assert snapshot(d) == before, "a file of the user's changed"
    return lines[0].split("error: ", 1)[1]


@pytest.mark.parametrize("line,w_option,path,overwrite,read,relation", cases())
def test_no_output_replaces_or_enters_a_path_the_run_reads(
    line, w_option, path, overwrite, read, relation, tmp_path, capsys
):
    said = run_refused(line, tmp_path, {w_option: path}, overwrite, capsys)
    expected = f"{w_option} {tmp_path / path} {relation} {read.format(d=tmp_path)}: {NEVER}"
    assert said == expected


FROZEN_CASES = [
    ("shelf/official", "{p}: a frozen board, which no run replaces"),
    ("shelf/official/extra", "{p}: inside the frozen board {d}/shelf/official, which no run"),
    ("shelf", "{p}: holds the frozen board {d}/shelf/official, which no run replaces"),
]


@pytest.mark.parametrize("line", LINES, ids=[line.name for line in LINES])
@pytest.mark.parametrize("path,said", FROZEN_CASES, ids=["board", "inside", "holder"])
def test_no_output_goes_inside_or_over_a_frozen_board(line, path, said, tmp_path, capsys):
    for w_option in line.writes:
        # without --overwrite a board or a folder holding one is refused as not empty
        # first (freeze: as a folder that exists); inside one, always as inside
        for overwrite in (False, True) if line.overwrite else (False,):
            if not overwrite and path != "shelf/official/extra":
                continue
            d = tmp_path / f"{w_option.strip('-')}-{overwrite}"
            d.mkdir()
            where = str(d / path)
            text = run_refused(line, d, {w_option: where}, overwrite, capsys)
            assert text.startswith(said.format(p=where, d=d)), text


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        for q in p.iterdir():
            _remove(q)
        p.rmdir()
    else:
        p.unlink()


def test_a_symlink_a_file_uri_and_a_glob_name_the_inputs_they_reach(tmp_path, capsys):
    line = pool_line("per-file")
    (tmp_path / "link").symlink_to(tmp_path / "preds" / "pool")
    uri = (tmp_path / "preds" / "pool").as_uri()
    for given in (str(tmp_path / "link"), uri):
        said = run_refused(line, tmp_path, {"--output": given}, True, capsys)
        assert said.startswith(f"--output {given} is --predictions "), said
        for p in list(tmp_path.iterdir()):
            if p.name != "link":
                _remove(p)
    globbed = Line("glob", ["evaluate"], {"--ground-truth": "gt/gt.csv"}, {"--output": "out"})
    lay_out(tmp_path, line)
    before = snapshot(tmp_path)
    argv = [*globbed.argv(tmp_path, {}, True), "--predictions", f"{tmp_path}/preds/pool/*.csv"]
    argv[argv.index("--output") + 1] = f"{tmp_path}/preds/pool/x.csv"
    screen = in_process(argv, capsys, None)
    assert screen.code == 2 and f"is inside --predictions {tmp_path}/preds/pool/*.csv" in screen.err
    assert snapshot(tmp_path) == before


def test_the_two_outputs_of_a_split_need_folders_apart(tmp_path, capsys):
    """``--output parentP/pub --private-output parentP`` was refused as "not empty" for
    the run's own lock file: one output holding the other is said as such."""
    line = pool_line("per-file")
    said = run_refused(
        line, tmp_path, {"--output": "parentP/pub", "--private-output": "parentP"}, False, capsys
    )
    assert said == (
        f"--private-output {tmp_path}/parentP holds --output {tmp_path}/parentP/pub: each "
        "output needs a folder of its own (writing one would replace the other)"
    )


def test_the_runs_own_lock_file_does_not_make_a_folder_taken(tmp_path):
    (tmp_path / "parent").mkdir()
    assert lock.acquire(tmp_path / "parent" / "pub")
    try:
        check_writable(tmp_path / "parent", overwrite=False)  # only our .pub.lock there
    finally:
        lock.release(tmp_path / "parent" / "pub")
    (tmp_path / "parent" / "mine.txt").write_text("mine")
    with pytest.raises(OutputError, match="folder exists and is not empty"):
        check_writable(tmp_path / "parent", overwrite=False)


@pytest.mark.parametrize("line", LINES, ids=[line.name for line in LINES])
def test_an_empty_path_names_its_option(line, tmp_path, capsys):
    for option in [*line.reads, *line.writes]:
        argv = line.argv(tmp_path, {}, False)
        argv[argv.index(option) + 1] = ""
        screen = in_process(argv, capsys, None)
        assert screen.code == 2, screen.text
        assert f"error: {option}: an empty path (give a file or folder)" in screen.err


def test_the_api_keeps_the_same_rules(tmp_path):
    (tmp_path / "shelf" / "official").mkdir(parents=True)
    (tmp_path / "shelf" / "official" / "FROZEN.json").write_text("{}")
    published_board(tmp_path / "board")  # a whole board: the frozen folder is the refusal
    before = snapshot(tmp_path)
    inside = tmp_path / "shelf" / "official" / "private_copy"
    with pytest.raises(OutputError, match="inside the frozen board"):
        ds.freeze_board(tmp_path / "board", inside)
    with pytest.raises(OutputError, match="inside the frozen board"):
        ds.make_library(inside, size=3)
    with pytest.raises(OutputError, match="holds the frozen board"):
        ds.make_library(tmp_path / "shelf", size=3, overwrite=True)
    assert snapshot(tmp_path) == before
