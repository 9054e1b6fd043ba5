"""The bad-input matrix: every job and the installed command against the inputs users get
wrong, one table (issue 16). A case is the files it writes, the command line, the exit
code, the one line the user sees and the files the output folder holds afterwards.

Every case is also checked for:
- no Python or Java stack trace on screen (only --debug shows one);
- no output folder and no debris left behind, nothing written outside --output: the
  case's folder is byte-identical afterwards, but for the output itself;
- a pre-existing output folder (a file of the user's in it, --overwrite given) kept byte
  for byte when the job fails;
- no wrong number: a legal-but-odd input (CRLF, a byte-order mark, blank lines...) gives
  the figures of the numpy specification on the rows the official reader's rules see
  (``official_rows``), under both engines for one matching-track file.

Most cases run in this process (``commands.main`` with the shared SparkSession, or the
in-process engine); a few run the installed command and jobs/*.py as the user does.
The cases live in ``tests/bad_input/``, one module a stage (``Case`` in common.py); this
module runs them. The docs' table (docs/errors.md) is generated from them (``python -m tests.test_bad_input_matrix``
rewrites that page).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from disc21spark.commands import COMMANDS
from tests.bad_input import CASES
from tests.bad_input.common import LIB_SIZE, RECORD_FILES, Case, fill
from tests.bad_input.images import library_with
from tests.conftest import ROOT, cli_env, without_root_file_access
from tests.running import Screen, in_process, quiet_log, snapshot

# ----------------------------------------------------------------------- harness

TRACES = (
    "Traceback (most recent call last)",
    "Exception ignored",
    "\tat org.",
    "\tat java.",
    "\tat scala.",
    "Caused by:",
    "py4j.protocol",
    "Py4JJavaError",
    "Exception in thread",
    "SparkException",
)


def line_pattern(sees: str, places: dict[str, str]) -> re.Pattern:
    parts = [re.escape(fill(p, places)) for p in sees.split("…")]
    return re.compile(".+".join(parts))


def as_user(launcher: list[str], argv: list[str], cwd: Path) -> Screen:
    proc = subprocess.run(
        [*launcher, *argv], capture_output=True, text=True, env=cli_env(), timeout=600, cwd=cwd
    )
    return Screen(proc.returncode, proc.stdout, proc.stderr)


def output_of(argv: list[str]) -> str | None:
    return argv[argv.index("--output") + 1] if "--output" in argv else None


def error_lines(screen: Screen) -> list[str]:
    return [
        line
        for line in screen.text.splitlines()
        if line.startswith(("error:", "internal error:")) or ": error: " in line
    ]


def check_screen(case: Case, engine: str, screen: Screen, places: dict[str, str]) -> None:
    code, sees = case.expected(engine)
    where = f"{case.id} [{engine}]:\n{screen.text[-3000:]}"
    debug = "--debug" in case.command
    if not debug:
        for trace in TRACES:
            assert trace not in screen.text, where
    else:  # the trace is what --debug is for
        assert "Traceback (most recent call last)" in screen.text, where
    assert screen.code == code, where
    lines = error_lines(screen)
    if code == 0:
        assert lines == [], where
        return
    assert len(lines) == 1, where
    line = lines[0]
    if ": error: " in line and not line.startswith("error:"):  # argparse names the program
        line = "error: " + line.split(": error: ", 1)[1]
    assert line_pattern(sees, places).fullmatch(line), f"{line!r} is not {sees!r}\n{where}"


def run_case(case: Case, engine: str, tmp: Path, capsys, shared: dict, session) -> None:
    as_root = case.root_skip and os.geteuid() == 0
    if as_root and not (engine in LAUNCHERS and shutil.which("setpriv")):
        pytest.skip("root reads and writes whatever the permissions say")
    variants = ["fresh"]
    # a user's folder kept when the job fails: the staging and publishing that keep it
    # are the runner's, whatever the engine; a case run in process too checks it there,
    # and Spark keeps it for the cases only Spark runs (globs, folders, Hadoop paths)
    checked_in_process = engine == "spark" and "local" in case.engines
    if case.code != 0 and case.preexisting and output_of(case.command) and not checked_in_process:
        variants.append("existing")
    for variant in variants:
        d = tmp / variant
        d.mkdir()
        places = {"d": str(d), **shared}
        if case.setup:
            case.setup(d)
        argv = [fill(a, places) for a in case.command]
        out = output_of(argv)
        if variant == "existing":
            Path(out).mkdir(exist_ok=True)
            (Path(out) / "mine.txt").write_text("the user's own file")
            argv.append("--overwrite")
        before = snapshot(d)
        shared_before = {k: snapshot(Path(v)) for k, v in shared.items() if k == "bench"}
        if engine in ("local", "spark"):
            screen = in_process([*argv, "--engine", engine], capsys, session)
        elif engine == "none":
            screen = in_process(argv, capsys, None)
        elif engine == "inproc":
            screen = in_process(argv, capsys, session)
        else:  # a launcher: the installed command or a job script, as the user starts them
            drop = without_root_file_access() if case.root_skip else []
            screen = as_user([*drop, *LAUNCHERS[engine](argv[0])], argv[1:], d)
        check_screen(case, engine, screen, places)
        after = snapshot(d)
        for key, value in shared_before.items():
            assert snapshot(Path(shared[key])) == value, f"{key} changed"
        code, _ = case.expected(engine)
        if code != 0:
            assert after == before, f"{case.id} [{engine}]: files changed: " + ", ".join(
                sorted(set(after) ^ set(before))
            )
            continue
        rel = os.path.relpath(out, d) if out else None
        kept = {
            k: v
            for k, v in after.items()
            if not (rel and (k == rel or k.startswith(rel + os.sep)))
            and k not in {fill(b, places) for b in case.beside}
        }
        assert kept == before, "written outside --output: " + ", ".join(set(kept) ^ set(before))
        if out and case.outputs:
            assert sorted(p.name for p in Path(out).iterdir()) == sorted(
                (*case.outputs, *RECORD_FILES)
            )
        if case.check:
            case.check(d, engine)


def jobs_script(command: str) -> list[str]:
    from disc21spark.core.invocation import JOB_SCRIPTS

    return [sys.executable, str(ROOT / "jobs" / JOB_SCRIPTS[command])]


LAUNCHERS: dict[str, Callable[[str], list[str]]] = {
    "installed": lambda command: [str(Path(sys.executable).parent / "disc21spark"), command],
    "jobs": jobs_script,
}


def params() -> list:
    return [
        pytest.param(case, engine, id=f"{case.id}-{engine}")
        for case in CASES
        for engine in case.engines
    ]


@pytest.fixture(scope="module")
def read_only(tmp_path_factory) -> str:
    """A folder no one may write in: root writes anywhere but in /proc."""
    if os.geteuid() == 0:
        return "/proc"
    folder = tmp_path_factory.mktemp("read_only")
    folder.chmod(0o555)
    return str(folder)


@pytest.fixture(scope="module")
def bench(spark, tmp_path_factory) -> str:
    """A small bench folder (make_queries on 8 images, 2 tests × 3 queries)."""
    from disc21spark.queries.job import QueryJob
    from disc21spark.queries.job import run as make_bench
    from disc21spark.queries.spec import Settings
    from disc21spark.queries.transforms import parse_tests

    quiet_log()
    root = tmp_path_factory.mktemp("matrix_bench")
    library_with(None, good=LIB_SIZE)(root)
    settings = Settings(
        tuple(parse_tests("crop:50,lowcon:60")), per_test=3, distractors=0.3, seed=2
    )
    make_bench(spark, QueryJob([str(root / "lib")], str(root / "bench"), settings))
    return str(root / "bench")


@pytest.mark.parametrize("case,engine", params())
def test_bad_input(case: Case, engine: str, tmp_path, capsys, read_only, request):
    shared = {"ro": read_only}
    if any("{bench}" in a for a in case.command):
        shared["bench"] = request.getfixturevalue("bench")
    uses_spark = engine in ("spark", "inproc")
    session = request.getfixturevalue("spark") if uses_spark else None
    run_case(case, engine, tmp_path, capsys, shared, session)


# ------------------------------------------------------------------ the docs' table
PAGE = ROOT / "docs" / "errors.md"
BEGIN, END = "<!-- bad-input-matrix: begin -->", "<!-- bad-input-matrix: end -->"
SHOWN = {"{d}/": "", "{ro}": "/read-only", "{bench}": "bench", "…": "…"}


def shown(text: str) -> str:
    for key, value in SHOWN.items():
        text = text.replace(key, value)
    return text.replace("|", "\\|")


def readme_table() -> str:
    """The matrix as docs/errors.md shows it: input, what the user sees, exit code."""
    lines = [
        BEGIN,
        "",
        "| | input | command | what the user sees | exit |",
        "|---|---|---|---|---|",
    ]
    for case in CASES:
        engines = (
            " and ".join(case.engines)
            .replace("none", "before Spark")
            .replace("inproc", "Spark")
            .replace("installed", "installed command")
            .replace("jobs", "jobs/*.py")
        )
        seen = shown(case.sees)
        if case.code:
            seen = f"`{seen}`"
        if case.note:
            seen += f" — {shown(case.note)}"
        for engine, (code, sees) in case.per_engine.items():
            seen += f"; `--engine {engine}`: `{shown(sees)}` (exit {code})"
        command = f"{case.command[0]} ({engines})"
        lines.append(f"| {case.group} | {shown(case.input)} | {command} | {seen} | {case.code} |")
    return "\n".join([*lines, "", END])


def test_the_docs_page_holds_the_table():
    text = PAGE.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "run python -m tests.test_bad_input_matrix"
    current = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert current == readme_table(), (
        "docs/errors.md is stale: python -m tests.test_bad_input_matrix"
    )


def test_the_matrix_covers_the_issue():
    assert len(CASES) >= 80 and len({c.id for c in CASES}) == len(CASES)
    commands = {c.command[0] for c in CASES}
    assert commands == set(COMMANDS)  # every command has its cases
    assert {"installed", "jobs", "local", "spark", "inproc", "none"} <= {
        e for c in CASES for e in c.engines
    }


if __name__ == "__main__":  # rewrite docs/errors.md's table from CASES
    text = PAGE.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    PAGE.write_text(text[:start] + readme_table() + text[end:], encoding="utf-8")
    print(f"{PAGE.relative_to(ROOT)}: the bad-input matrix rewritten")
