"""The product's own outputs that the docs show, made by its own commands.

Each step is a tutorial page's commands, with that page's data and seeds, so that a
picture shows the figures its page quotes (the page is named in each docstring; change
the two together). The commands run through ``disc21spark.commands.main``, as
``jobs/*.py`` and the console script do, all in this process: the first Spark command
starts the one session (local profile) and the runner finds it again for every later one
(``getOrCreate``), so the build pays for one JVM. Paths are relative to the current
folder, a throwaway one that holds ``data/`` (``__main__.py``).
"""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

GT = "data/disc21_dev_ground_truth.csv"


class StepFailed(RuntimeError):
    """A command of the docs build failed; the message holds what it printed."""


def run(command: str) -> None:
    """``disc21spark COMMAND`` (a command line, split as a shell splits it) in this
    process, with ``--quiet``; what it prints is kept back unless it fails.

    Raises:
        StepFailed: the exit code was not 0 (stdout and stderr in the message).
    """
    from disc21spark.commands import main

    name, *options = shlex.split(command)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([name, "--quiet", *options])
        except SystemExit as exc:  # argparse's usage error: a command line here is wrong
            code = exc.code
    if code != 0:
        raise StepFailed(f"disc21spark {command}: exit {code}\n{out.getvalue()}{err.getvalue()}")


def synth(options: str) -> None:
    """``python -m disc21spark.testing.synth --ground-truth GT OPTIONS``, quietly."""
    from disc21spark.testing import synth as simulated

    with contextlib.redirect_stdout(io.StringIO()):
        simulated.main(["--ground-truth", GT, *shlex.split(options)])


def evaluate_one() -> Path:
    """docs/tutorial/reading-results.md: 200,000 pairs, scored in this process."""
    synth("--output demo/predictions.csv --predictions 200000 --seed 21")
    run(f"evaluate --ground-truth {GT} --predictions demo/predictions.csv --output demo/out")
    return Path("demo/out/pr_curve.png")


def pool() -> Path:
    """docs/tutorial/comparing-systems.md: three seeds, and a team that answered half."""
    for seed in (31, 32, 33):
        synth(f"--output demo/pool/team{seed}.csv --predictions 100000 --seed {seed}")
    # the page's `head -n 50001`: the header line and the first 50,000 pairs
    with open("demo/pool/team31.csv", encoding="utf-8") as whole:
        half = [line for _, line in zip(range(50_001), whole)]
    Path("demo/pool/half31.csv").write_text("".join(half), encoding="utf-8")
    run(f"evaluate --ground-truth {GT} --predictions 'demo/pool/*.csv' --output demo/leaderboard")
    return Path("demo/leaderboard/leaderboard.html")


def budgets() -> Path:
    """docs/tutorial/descriptor-track.md: 20,000 references, four global budgets."""
    synth("--descriptors demo/descriptors --references 20000 --dim 64 --noise 1.2 --seed 21")
    run(
        f"evaluate --ground-truth {GT} --query-descriptors demo/descriptors/queries.h5 "
        "--reference-descriptors demo/descriptors/references.h5 "
        "--budgets 10000 50000 100000 500000 --output demo/out_budgets"
    )
    return Path("demo/out_budgets/budgets.png")


def bench() -> Path:
    """docs/tutorial/altered-images.md: 60 images, three tests of 20 queries each."""
    Path("demo").mkdir(exist_ok=True)
    run("make-library --output demo/library --size 60 --seed 1")
    run(
        "make-queries --images demo/library --output demo/bench "
        "--tests crop:50,jumble:4x4,lowcon:80 --queries-per-test 20 --distractors 0.25 --seed 7"
    )
    return Path("demo/bench/contact_sheet.png")


def rank_report() -> Path:
    """docs/tutorial/altered-images.md: two methods ranked on the bench of ``bench()``."""
    run("rank-eval --bench demo/bench --methods colorhist tiny --output demo/report --subsets 2")
    return Path("demo/report/rank_summary.png")


def timed(name: str, step: Callable[[], Path]) -> Path:
    """Run one step and say on stderr how long it took; the file it made.

    Raises:
        StepFailed: the step did not write the file it names.
    """
    started = time.monotonic()
    made = step()
    if not made.is_file():
        raise StepFailed(f"{name}: the commands did not write {made}")
    print(f"pictures: {name} ({time.monotonic() - started:.1f} s)", file=sys.stderr)
    return made
