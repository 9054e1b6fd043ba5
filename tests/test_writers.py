"""One writer per output (issue 25): a second run into an output folder a live run is
writing stops at once (exit 2, one line naming the other run's pid and host), neither
output is mixed, and a dead writer's lock is taken over and cleared.

Real processes (``python jobs/evaluate.py``): the first run is held by a test-only fault
point (``core/faults.py``) between writing its output and putting it in place, the
moment a second writer would do the most harm; a plain path, a ``file:`` URI and a
``viewfs://`` mount table over a local folder (a Hadoop file system with no ``flock``:
the lock is made with ``create(overwrite=False)`` through ``core/fs.py``). A URI goes
through Hadoop's file systems, so its runs start Spark."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from disc21spark.core import faults, lock
from tests.conftest import ROOT, cli_env, error_lines, held_pid
from tests.pool_helpers import GT, random_submission
from tests.running import snapshot


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("writers")
    GT.to_csv(root / "gt.csv", index=False)
    rng = np.random.default_rng(21)
    for name in ("first", "second"):
        random_submission(rng, 200).to_csv(root / f"{name}.csv", index=False)
    return root


def evaluate(inputs: Path, team: str, output: str, engine: str, **env: str) -> subprocess.Popen:
    args = [
        "--ground-truth",
        str(inputs / "gt.csv"),
        "--predictions",
        str(inputs / f"{team}.csv"),
        "--engine",
        engine,
        "--output",
        output,
        "--overwrite",
    ]
    return subprocess.Popen(
        [sys.executable, str(ROOT / "jobs" / "evaluate.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**cli_env(), **env},
        start_new_session=True,
    )


def predictions_of(out: Path) -> str:
    inputs = json.loads((out / "run.json").read_text())["inputs"]
    return next(
        Path(i["path"]).name for i in inputs if i["path"].endswith(("first.csv", "second.csv"))
    )


def viewfs_conf(folder: Path, link: Path) -> tuple[str, dict[str, str]]:
    """``viewfs://<table>/x`` linking /x to the local folder ``link``, for a job started as
    its own process: a ``core-site.xml`` in ``folder``, found through HADOOP_CONF_DIR
    (Spark's launcher puts that folder on the JVM's classpath)."""
    table = f"w{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "core-site.xml").write_text(
        "<configuration><property>"
        f"<name>fs.viewfs.mounttable.{table}.link./x</name><value>{link.as_uri()}</value>"
        "</property></configuration>\n"
    )
    return f"viewfs://{table}/x", {"HADOOP_CONF_DIR": str(folder)}


@pytest.mark.parametrize("kind", ["path", "file-uri", "viewfs"])
def test_a_second_writer_stops_at_once_and_a_dead_ones_lock_is_cleared(
    inputs, tmp_path, tmp_path_factory, kind
):
    out = tmp_path / "out"
    env: dict[str, str] = {}
    if kind == "viewfs":
        table, env = viewfs_conf(tmp_path_factory.mktemp("hadoop-conf"), tmp_path)
        output = f"{table}/out"
    else:
        output = str(out) if kind == "path" else f"file://{out}"
    engine = "local" if kind == "path" else "spark"
    # a previous output (made in process on the same folder: the refusals below are what
    # the URI's kind is for; each Spark run costs a JVM), then a first run held just
    # before it publishes
    assert evaluate(inputs, "second", str(out), "local").wait(timeout=300) == 0
    before = snapshot(out)
    marker = tmp_path / "held.pid"
    first = evaluate(
        inputs, "first", output, engine, **env, **{faults.HOLD_AT: f"publish:{marker}"}
    )
    try:
        pid = held_pid(first, marker, "publish")
        assert (tmp_path / ".out.lock").exists()
        second = evaluate(inputs, "second", output, "local" if kind == "path" else "auto", **env)
        stdout, stderr = second.communicate(timeout=120)
        assert second.returncode == 2, stderr
        lines = error_lines(subprocess.CompletedProcess([], 2, stdout, stderr))
        assert len(lines) == 1 and lines[0].startswith(
            f"error: {output if kind == 'viewfs' else out}: another run is writing this output "
            f"(pid {pid} on "
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
    if kind == "viewfs":
        # a dead writer's lock on a Hadoop file system is taken over as a job's is: in
        # process by test_a_lock_on_a_hadoop_file_system_says_who_holds_it_and_is_taken_over_when_dead
        return
    third = evaluate(inputs, "first", output, engine, **env)
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


def test_a_lock_on_a_hadoop_file_system_says_who_holds_it_and_is_taken_over_when_dead(
    spark, tmp_path
):
    """The lock through Hadoop's FileSystem API (``viewfs://`` over this folder): held once,
    removed with its checksum file, a dead writer's taken over: its pid gone on this host,
    or (another host) its file untouched for ``lock.STALE`` seconds."""
    from disc21spark.core.errors import OutputError
    from tests.pool_helpers import mount

    out = f"{mount(spark, tmp_path)}/out"
    assert lock.lock_path(out) is None and lock.lock_uri(out).endswith("/x/.out.lock")
    assert lock.acquire(out) is True
    assert lock.acquire(out) is False  # held already, by this process
    holder = json.loads((tmp_path / ".out.lock").read_text())
    assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
    lock.release(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # its .crc gone with it
    # a writer of this host that was SIGKILLed: its lock is debris
    path = tmp_path / ".out.lock"
    path.write_text(json.dumps({"pid": 2**22 + 12345, "host": socket.gethostname()}))
    assert lock.acquire(out) is True
    lock.release(out)
    # a writer of another host: alive while its heartbeat touches the file
    path.write_text(json.dumps({"pid": 7, "host": "node-3", "started": "then"}))
    with pytest.raises(OutputError) as info:
        lock.acquire(out)
    assert str(info.value) == (
        f"{out}: another run is writing this output (pid 7 on node-3, "
        "started then); wait for it to end or stop it"
    )
    untouched = time.time() - lock.STALE - 60
    os.utime(path, (untouched, untouched))
    assert lock.acquire(out) is True
    assert json.loads(path.read_text())["pid"] == os.getpid()
    lock.release_all()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


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
