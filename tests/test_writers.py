"""One writer per output (issue 25): a second run into an output folder a live run is
writing stops at once (exit 2, one line naming the other run's pid and host), neither
output is mixed, and a dead writer's lock is taken over and cleared.

Real processes (``python jobs/evaluate.py``): the first run is held by a test-only fault
point (``core/faults.py``) between writing its output and putting it in place, the
moment a second writer would do the most harm; a plain path and a ``file:`` URI (the
URI goes through Hadoop's file systems, so its first run starts Spark)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from disc21spark.core import faults, lock
from tests.conftest import ROOT, cli_env, error_lines, held_pid
from tests.test_bad_input_matrix import snapshot
from tests.test_pool import GT, random_submission


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("writers")
    GT.to_csv(root / "gt.csv", index=False)
    rng = np.random.default_rng(21)
    for name in ("first", "second"):
        random_submission(rng, 200).to_csv(root / f"{name}.csv", index=False)
    return root


def evaluate(inputs: Path, team: str, output: str, engine: str, **env: str) -> subprocess.Popen:
    args = ["--ground-truth", str(inputs / "gt.csv"), "--predictions", str(inputs / f"{team}.csv"),
            "--engine", engine, "--output", output, "--overwrite"]  # fmt: skip
    return subprocess.Popen(
        [sys.executable, str(ROOT / "jobs" / "evaluate.py"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**cli_env(), **env}, start_new_session=True,
    )  # fmt: skip


def predictions_of(out: Path) -> str:
    inputs = json.loads((out / "run.json").read_text())["inputs"]
    return next(Path(i["path"]).name for i in inputs if i["path"].endswith(("first.csv",
                                                                               "second.csv")))


@pytest.mark.parametrize("kind", ["path", "file-uri"])
def test_a_second_writer_stops_at_once_and_a_dead_ones_lock_is_cleared(inputs, tmp_path, kind):
    out = tmp_path / "out"
    output = str(out) if kind == "path" else f"file://{out}"
    engine = "local" if kind == "path" else "spark"
    # a previous output, then a first run held just before it publishes
    assert evaluate(inputs, "second", output, engine).wait(timeout=300) == 0
    before = snapshot(out)
    marker = tmp_path / "held.pid"
    first = evaluate(inputs, "first", output, engine, **{faults.HOLD_AT: f"publish:{marker}"})
    try:
        pid = held_pid(first, marker, "publish")
        assert (tmp_path / ".out.lock").exists()
        second = evaluate(inputs, "second", output, "local" if kind == "path" else "auto")
        stdout, stderr = second.communicate(timeout=120)
        assert second.returncode == 2, stderr
        lines = error_lines(subprocess.CompletedProcess([], 2, stdout, stderr))
        assert len(lines) == 1 and lines[0].startswith(
            f"error: {out}: another run is writing this output (pid {pid} on "
            f"{socket.gethostname()}, started "
        ), lines
        assert "Traceback" not in stderr
        assert snapshot(out) == before  # neither the held run nor the refused one wrote
        # the held writer dies without a chance to clean (SIGKILL): its lock is debris
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=60)
    finally:
        first.kill()
    assert (tmp_path / ".out.lock").exists()
    assert snapshot(out) == before
    third = evaluate(inputs, "first", output, engine)
    stdout, stderr = third.communicate(timeout=300)
    assert third.returncode == 0, stderr
    assert predictions_of(out) == "first.csv" and (out / "_SUCCESS").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["held.pid", "out"]


def test_the_lock_is_held_once_per_process_and_released(tmp_path):
    out = tmp_path / "out"
    assert lock.acquire(out) is True
    assert lock.acquire(f"file://{out}") is False  # the same folder, held already
    holder = json.loads((tmp_path / ".out.lock").read_text())
    assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
    lock.release(out)
    assert not (tmp_path / ".out.lock").exists()
    assert lock.lock_path("s3a://bucket/out") is None  # no exclusive create there


def test_an_output_folder_gets_the_users_umask(tmp_path):
    from disc21spark.core.output import staged_output

    mask = os.umask(0o027)
    try:
        with staged_output(tmp_path / "out", overwrite=False) as stage:
            (stage / "a.txt").write_text("a\n")
    finally:
        os.umask(mask)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o750  # not mkdtemp's 0700
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the lock is gone too
