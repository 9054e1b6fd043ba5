"""The option vocabulary (docs/reference/vocabulary.md) holds: every option has a help
text showing its default, old names work for one release with one warning line, value
lists take spaces or commas, --version, and --help or a scoring run imports only what it
uses. No JVM: parsers and subprocesses of --help."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from disc21spark import __version__, commands
from disc21spark.commands.common import _Renamed
from disc21spark.core import invocation
from tests.conftest import DESCRIPTORS, MINIMAL

ROOT = Path(__file__).resolve().parents[1]
GT = str(ROOT / "data" / "disc21_dev_ground_truth.csv")
# command, old name, new name, a value, the attribute both set
RENAMED = [
    ("evaluate", "--partitions", "--sort-partitions", ["5"], "sort_partitions"),
    ("evaluate", "--metric", "--distance", ["ip"], "distance"),
    (
        "evaluate",
        "--score-norm",
        "--score-norm-descriptors",
        ["bg.h5", "bg2.h5"],
        "score_norm_descriptors",
    ),
    ("rank-eval", "--descriptors", "--methods", ["tiny,pdq"], "methods"),
    ("rank-eval", "--partitions", "--query-partitions", ["3"], "query_partitions"),
    ("make-queries", "--partitions", "--image-partitions", ["4"], "image_partitions"),
    ("make-queries", "--format", "--query-format", ["jpeg"], "query_format"),
    ("extract", "--partitions", "--image-partitions", ["2"], "image_partitions"),
]


def parsers() -> dict[str, argparse.ArgumentParser]:
    return commands.main_parser()[1]


def options(name: str) -> list[argparse.Action]:
    return [a for a in parsers()[name]._actions if a.option_strings and a.help != argparse.SUPPRESS]


@pytest.mark.parametrize("name", list(commands.COMMANDS))
def test_every_option_has_help_and_shows_its_default(name, capsys):
    for action in options(name):
        assert action.help, f"{name} {action.option_strings[0]} has no help"
    with pytest.raises(SystemExit):
        commands.parse([name, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for action in options(name):
        if action.default not in (None, False, [], "", argparse.SUPPRESS) and action.nargs != 0:
            shown = action.default if not isinstance(action.default, list) else ""
            assert f"(default: {shown}" in out or "default:" in (action.help or ""), (
                f"{name} {action.option_strings[0]}: default {action.default!r} not shown"
            )


@pytest.mark.parametrize("command,old,new,value,dest", RENAMED)
def test_an_old_name_still_works_with_one_warning(command, old, new, value, dest, capsys):
    base = [command, *MINIMAL[command]]
    if command == "evaluate" and dest in ("distance", "score_norm_descriptors"):
        base = [command, "--ground-truth", "gt.csv", "--output", "o", *DESCRIPTORS]
    with_new = commands.parse([*base, new, *value])
    assert capsys.readouterr().err == ""
    with_old = commands.parse([*base, old, *value])
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"warning: {old} is deprecated, use {new} (the old name will be removed in the next release)"
    ]
    assert vars(with_old) == vars(with_new)
    assert getattr(with_new, dest) != getattr(commands.parse(base), dest)


def test_every_old_name_is_listed_and_hidden(capsys):
    found = {
        (name, a.option_strings[0], a.renamed.option_strings[0])
        for name, p in parsers().items()
        for a in p._actions
        if isinstance(a, _Renamed)
    }
    assert found == {(c, o, n) for c, o, n, _, _ in RENAMED}
    for name in commands.COMMANDS:
        with pytest.raises(SystemExit):
            commands.parse([name, "--help"])
        out = capsys.readouterr().out
        shown = [
            old for c, old, _ in found if c == name and re.search(rf"(?<![\w-]){old}(?![\w-])", out)
        ]
        assert not shown, f"{name} --help shows old names {shown}"


def test_value_lists_take_spaces_or_commas():
    spaced = commands.parse(
        ["rank-eval", *MINIMAL["rank-eval"], "--methods", "tiny", "pdq", "--sizes", "2", "3,4"]
    )
    joined = commands.parse(
        ["rank-eval", *MINIMAL["rank-eval"], "--methods", "tiny,pdq", "--sizes", "2,3,4"]
    )
    assert spaced.methods == joined.methods == "tiny,pdq"
    assert spaced.sizes == joined.sizes == [2, 3, 4]
    tests = commands.parse(
        ["make-queries", *MINIMAL["make-queries"], "--tests", "crop:50", "jumble:4x4"]
    )
    assert tests.tests == "crop:50,jumble:4x4"


def test_an_empty_list_item_is_kept_for_the_check():
    args = commands.parse(
        ["make-queries", *MINIMAL["make-queries"], "--tests", "crop:50,,jumble:2x2"]
    )
    assert args.tests == "crop:50,,jumble:2x2"


def test_a_bad_size_in_a_list_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        commands.parse(["rank-eval", *MINIMAL["rank-eval"], "--sizes", "3", "2"])
    assert exc.value.code == 2
    assert "argument --sizes: sizes must be positive and increasing" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["--version"], *[[name, "--version"] for name in commands.COMMANDS]]
)
def test_version(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        commands.parse(argv)
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"disc21spark {__version__}"


IMPORTED = (
    "import sys\n"
    "from disc21spark.commands import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "heavy = ['PIL', 'pyspark', 'py4j', 'faiss', 'h5py', 'skimage', 'matplotlib', 'pandas',\n"
    "         'scipy', 'pyarrow.compute', 'numpy.ma', 'disc21spark.matching.stats.groups',\n"
    "         'disc21spark.matching.spark', 'disc21spark.pool', 'disc21spark.descriptors']\n"
    "print(' '.join(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
)


def imported(*argv: str, block: str = "") -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run the command in a fresh interpreter; the heavy modules it imported. ``block``
    names modules that fail to import there (as if not installed)."""
    code = IMPORTED
    if block:
        code = (f"import sys\nfor m in {block.split()!r}:\n    sys.modules[m] = None\n") + code
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    return proc, set(proc.stderr.strip().splitlines()[-1].split()) if proc.stderr.strip() else set()


@pytest.mark.parametrize(
    "name", ["evaluate", "make-library", "make-queries", "extract", "rank-eval"]
)
def test_help_imports_neither_pillow_nor_pyspark(name):
    proc, heavy = imported(name, "--help")
    assert "usage:" in proc.stdout
    assert not heavy & {"PIL", "pyspark", "py4j", "faiss", "matplotlib", "pandas"}, heavy


def test_make_queries_help_lists_the_tests_without_pyspark_or_pillow():
    proc, heavy = imported("make-queries", "--help")
    assert "crop:K" in proc.stdout and not heavy & {"pyspark", "py4j"}
    proc, _ = imported("make-queries", "--help", block="PIL PIL.Image")
    assert "usage:" in proc.stdout and "crop:K" in proc.stdout  # the list needs no Pillow


def test_evaluate_help_works_without_pillow():
    proc, _ = imported("evaluate", "--help", block="PIL PIL.Image")
    assert proc.returncode == 0 and "--ground-truth" in proc.stdout


def test_a_scoring_run_in_process_starts_no_spark(tmp_path):
    preds = tmp_path / "p.csv"
    preds.write_text("Q00000,R000000,0.9\nQ00001,R1,0.5\n")
    proc, heavy = imported(
        "evaluate",
        "--ground-truth",
        GT,
        "--predictions",
        str(preds),
        "--output",
        str(tmp_path / "out"),
        "--quiet",
    )
    assert (tmp_path / "out" / "metrics.json").exists(), proc.stderr
    assert not heavy & {"pyspark", "py4j", "faiss", "h5py", "skimage"}, heavy


def test_a_scoring_run_with_intervals_imports_neither_scipy_nor_pyarrow_compute(tmp_path):
    # the bootstrap's product is scipy's kernel loaded alone: scipy's import (numpy's f2py
    # with it) took longer than the product; Arrow's kernels are called by name, without the Python
    # wrappers pyarrow.compute builds when imported (a header line, a true pair, no id
    # warning: the common path)
    preds = tmp_path / "p.csv"
    preds.write_text("query_id,reference_id,score\nQ00003,R326040,0.9\nQ00001,R1,0.5\n")
    out = tmp_path / "out"
    proc, heavy = imported(
        "evaluate", "--ground-truth", GT, "--predictions", str(preds), "--output", str(out)
    )
    assert "95% interval" in proc.stdout and "warning" not in proc.stderr, proc.stderr
    assert not heavy & {"scipy", "pyarrow.compute"}, heavy


def test_an_in_process_run_without_resamples_imports_only_what_it_needs(tmp_path):
    # start-up is part of a 500,000-pair run's time: no Spark side, no pool, no group
    # tables, no scipy, no pyarrow.compute, and no numpy.ma (``np.unique`` and
    # ``np.isin`` import it: kernel.distinct and kernel.among do not)
    preds = tmp_path / "p.csv"
    preds.write_text("query_id,reference_id,score\nQ00003,R326040,0.9\nQ00001,R1,0.5\n")
    out = tmp_path / "out"
    proc, heavy = imported(
        "evaluate",
        "--ground-truth",
        GT,
        "--predictions",
        str(preds),
        "--output",
        str(out),
        "--resamples",
        "0",
    )
    assert (out / "metrics.json").exists(), proc.stderr
    assert heavy == {"PIL"}, heavy  # Pillow draws pr_curve.png


def test_messages_name_the_command_as_typed():
    try:
        invocation.started_from_job_script(False)
        assert invocation.command("make-queries") == "disc21spark make-queries"
        invocation.started_from_job_script(True)
        assert invocation.command("extract") == "jobs/extract_descriptors.py"
    finally:
        invocation.started_from_job_script(False)
    assert set(invocation.JOB_SCRIPTS) == set(commands.COMMANDS)
    for script in invocation.JOB_SCRIPTS.values():
        assert (ROOT / "jobs" / script).exists()


def test_a_job_script_names_itself_in_a_message(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "jobs" / "rank_eval.py"),
            "--bench",
            str(tmp_path / "nope"),
            "--output",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {tmp_path / 'nope'}: not a folder (give the --output of jobs/make_queries.py)"
    )


@pytest.mark.parametrize("name", list(commands.COMMANDS))
def test_help_needs_only_the_standard_library(name):
    """`python3 jobs/<command>.py --help` answers even from an interpreter without the
    project's dependencies (a user who has not activated the virtualenv yet)."""
    proc, _ = imported(name, "--help", block="numpy PIL PIL.Image pyspark pandas pyarrow faiss")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage: disc21spark " + name)
