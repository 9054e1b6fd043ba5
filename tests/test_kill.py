"""SIGKILL at every phase (issue 16): a job killed without warning (kill -9, the OOM
killer, a lost machine) leaves the previous output as it was and nothing that looks like
a complete output; the next run cleans the debris.

Each job runs as a user runs it (``python jobs/X.py``, its own JVM). A test-only hold
(``core/faults.py``) stops the driver at the named phase, or at ``publish`` (the output
is written, not yet in place), and the test kills the driver with SIGKILL there. The
jobs of one command's phases run side by side, each on its own copy of the output."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import psutil
import pytest
from PIL import Image

from disc21spark.core import faults
from disc21spark.library import images as library
from tests.conftest import ROOT, cli_env, held_pid
from tests.pool_helpers import GT, random_submission
from tests.running import snapshot, succeed


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("kill")
    GT.to_csv(root / "gt.csv", index=False)
    rng = np.random.default_rng(9)
    for i in range(3):
        random_submission(rng, 200).to_csv(root / f"team{i}.csv", index=False)
    (root / "library").mkdir()
    for i in range(12):
        image = library.dead_leaves(3, i, 64, 48)
        Image.fromarray(image).save(root / "library" / f"img_{i:02d}.png")
    return root


def argv(kind: str, root: Path, out: Path) -> list[str]:
    gt = ["--ground-truth", str(root / "gt.csv")]
    return {
        "evaluate": [
            "evaluate.py",
            *gt,
            "--predictions",
            str(root / "team0.csv"),
            "--engine",
            "spark",
        ],
        "pool": [
            "evaluate.py",
            *gt,
            "--predictions",
            str(root / "team*.csv"),
            "--pool-plan",
            "per-file",
            "--engine",
            "spark",
        ],
        "make_queries": [
            "make_queries.py",
            "--images",
            str(root / "library"),
            "--tests",
            "crop:50,lowcon:40",
            "--queries-per-test",
            "4",
            "--seed",
            "2",
        ],
        "rank_eval": [
            "rank_eval.py",
            "--bench",
            str(root / "bench"),
            "--methods",
            "colorhist",
            "--subsets",
            "2",
            "--sizes",
            "6",
            "--resamples",
            "20",
        ],
    }[kind] + ["--output", str(out), "--overwrite"]


def in_process(spark, args: list[str]) -> None:
    """The same command in the suite's session: the runs before and after the kills (what
    they test is in this process: the output's publish and the clearing of debris)."""
    succeed(spark, [args[0].removesuffix(".py").replace("_", "-"), *args[1:]])


def job(args: list[str], **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "jobs" / args[0]), *args[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**cli_env(), **env},
        start_new_session=True,
    )


# where a kill can do different harm: mid-Spark work with no output begun (the earlier
# phases leave the output as untouched as this one, and test_signals.py covers the
# session's start), the report being staged, and the staged output not yet in place
# ("publish", the step after the last phase)
POINTS = {
    "evaluate": ["count", "report", "publish"],
    # the other jobs where their harm differs from evaluate's: a pool's leaderboard and
    # a rank report staged whole (their Spark work, like evaluate's, writes nothing), and
    # the altered images that make-queries' executors write into its staging folder
    "pool": ["publish"],
    "make_queries": ["alter"],
    "rank_eval": ["publish"],
}


@pytest.mark.parametrize("kind", list(POINTS))
def test_sigkill_at_every_phase_keeps_the_previous_output(spark, inputs, tmp_path, kind):
    """One job per phase, all started at once (a SIGKILL ends a job: one run cannot be
    killed twice), each into its own copy of the user's previous output: the JVMs start
    side by side instead of one after the other."""
    if kind == "rank_eval" and not (inputs / "bench" / "_SUCCESS").exists():
        in_process(spark, argv("make_queries", inputs, inputs / "bench"))
    first = tmp_path / "0" / "out"
    first.parent.mkdir()
    in_process(spark, argv(kind, inputs, first))  # the previous output a user has
    (first / "note.txt").write_text("the user's own file, inside the output folder\n")
    before = snapshot(first)
    folders = {point: tmp_path / str(i) for i, point in enumerate(POINTS[kind])}
    for folder in folders.values():
        if folder != first.parent:
            shutil.copytree(first, folder / "out")
    held = {
        point: job(
            argv(kind, inputs, folder / "out"), **{faults.HOLD_AT: f"{point}:{folder / 'held.pid'}"}
        )
        for point, folder in folders.items()
    }
    try:
        for point, proc in held.items():
            killed_at(point, proc, folders[point], before)
    finally:
        for proc in held.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    # the next run puts its output in place and clears what the killed run left
    for folder in folders.values():
        in_process(spark, argv(kind, inputs, folder / "out"))
        assert (folder / "out" / "_SUCCESS").exists() and not (folder / "out" / "note.txt").exists()
        assert [p.name for p in folder.iterdir() if p.name.startswith(".out.")] == []


def killed_at(point: str, proc: subprocess.Popen, folder: Path, before: dict) -> None:
    """SIGKILL ``proc`` (a job into ``folder/out``) once it is held at ``point``: its JVM
    and Python workers go with it, and ``folder`` holds the output as it was ``before``
    and nothing else a user sees, nor anything that looks like a complete output."""
    driver = held_pid(proc, folder / "held.pid", repr(point))
    assert driver == proc.pid
    tree = psutil.Process(driver).children(recursive=True)  # the JVM, Python workers
    os.kill(driver, signal.SIGKILL)
    proc.communicate(timeout=60)
    gone, alive = psutil.wait_procs(tree, timeout=60)
    assert not alive, f"left running after the driver's SIGKILL at {point}: {alive}"
    out = folder / "out"
    assert snapshot(out) == before, f"killed at {point}: the previous output changed"
    beside = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    assert beside == ["held.pid", "out"], f"killed at {point}: something visible was left: {beside}"
    looks_done = [p for p in folder.rglob("_SUCCESS") if p.parent != out]
    assert all(p.parent.name.startswith(".out.") for p in looks_done), looks_done
