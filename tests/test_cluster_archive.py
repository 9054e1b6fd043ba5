"""A cluster whose nodes have no project Python: executors get their environment from
make dist's archive, outputs go through Hadoop's file systems (file:/// URIs).

Two workers and a master on 127.0.0.1 started from the installed PySpark, in an
environment with no virtualenv on PATH and no PYSPARK_PYTHON (conftest's ``standalone``,
shared with test_cluster.py); jobs submitted from a folder
outside the checkout with ``--archives dist/disc21spark-env.tar.gz#env`` and
``spark.pyspark.python=./env/bin/python``, as the tutorial's step 6 and docs/cluster.md say.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from disc21spark.testing.synth import read_ground_truth_csv, simulate_submission
from tests.conftest import JVM_OPTIONS, clean_env

ROOT = Path(__file__).resolve().parents[1]
# outside the checkout: a fresh clone on the same machine reuses an archive built from the
# same inputs (as pip reuses the wheels it built), and builds one when an input changed
CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "disc21spark" / "dist-env"
)
# one xdist worker runs every cluster test (conftest.ONE_WORKER): they share one cluster
pytestmark = pytest.mark.cluster


def archive_key() -> str:
    """What decides the archive's contents: the script and the dependencies' declarations,
    the interpreter, and the versions of the package's runtime dependencies as the
    package index gives them today (the virtualenv's, installed from the same index by
    make venv; its tools for tests and docs do not count). The package's own code does not
    matter: the job ships it to the executors itself."""
    digest = hashlib.sha256(sys.version.encode())
    for name in ("setup.cfg", "pyproject.toml", "scripts/make_dist.sh"):
        digest.update((ROOT / name).read_bytes())
    digest.update("\n".join(runtime_versions("disc21spark")).encode())
    return digest.hexdigest()[:16]


def runtime_versions(package: str) -> list[str]:
    """``name==version`` of every installed distribution ``package`` needs to run (its
    requirements and theirs, extras left out), sorted."""
    seen: dict[str, str] = {}
    todo = [package]
    while todo:
        dist = metadata.distribution(todo.pop())
        name = canonicalize_name(dist.metadata["Name"])
        if name in seen:
            continue
        seen[name] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return sorted(f"{n}=={v}" for n, v in seen.items() if n != package)


@pytest.fixture(scope="module")
def archive() -> Path:
    """make dist's environment archive, built by scripts/make_dist.sh unless the cache
    holds one of the same key (``archive_key``); the cache keeps the two latest keys."""
    key = archive_key()
    cached = CACHE / key / "disc21spark-env.tar.gz"
    if not cached.exists():
        built = subprocess.run(
            [str(ROOT / "scripts" / "make_dist.sh")],
            env={**clean_env(), "VENV": str(Path(sys.executable).parents[1])},
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
        assert list((ROOT / "dist").glob("disc21spark-*-py3-none-any.whl"))
        # keep the two latest keys (another clone's virtualenv may differ in a version)
        for old in sorted(CACHE.glob("*/"), key=lambda p: p.stat().st_mtime)[:-1]:
            shutil.rmtree(old, ignore_errors=True)
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".partial")
        shutil.copy(ROOT / "dist" / "disc21spark-env.tar.gz", partial)
        partial.rename(cached)  # a run killed while copying leaves no archive behind
    return cached


@pytest.fixture
def cluster(standalone) -> tuple[str, Path]:
    """The suite's standalone cluster (conftest): two workers, no project Python on them."""
    return standalone


def submit(cluster, archive: Path, cwd: Path, job: str, *args: str) -> subprocess.CompletedProcess:
    """The tutorial's cluster line (step 6): scripts/spark-submit (the virtualenv's Spark and driver Python,
    found by the script) with the archive for the executors."""
    master, _ = cluster
    return subprocess.run(
        [
            str(ROOT / "scripts" / "spark-submit"),
            "--master",
            master,
            "--executor-memory",
            "1g",
            "--archives",
            f"{archive}#env",
            "--conf",
            "spark.pyspark.python=./env/bin/python",
            "--conf",  # the suite's JVM settings (conftest.JVM_OPTIONS): jobs of seconds
            f"spark.executor.extraJavaOptions={JVM_OPTIONS}",
            str(ROOT / "jobs" / f"{job}.py"),
            *args,
        ],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_a_pool_on_a_cluster_with_the_archive_equals_local_mode(
    cluster, archive, tmp_path, dev_gt_path
):
    """One application is enough to show the archive is what the executors run (each
    application unpacks it again on every worker, the largest cost of this file); the
    descriptor track and make_queries through URIs run on the same cluster in
    test_cluster.py."""
    from disc21spark.core.fs import LocalFiles
    from disc21spark.matching.ground_truth import load_ground_truth
    from disc21spark.matching.oracle.spec import evaluate
    from disc21spark.resolve import resolve

    work = tmp_path / "elsewhere"  # the user's folder, not the checkout
    work.mkdir()
    gt = read_ground_truth_csv(dev_gt_path)

    # a pool of three submissions
    pool = work / "pool"
    pool.mkdir()
    frames = {}
    for i in range(3):
        frames[f"team{i}"] = simulate_submission(gt, 20_000, seed=40 + i)
        frames[f"team{i}"].to_csv(pool / f"team{i}.csv", index=False)
    out = work / "board"
    proc = submit(
        cluster,
        archive,
        work,
        "evaluate",
        "--ground-truth",
        str(dev_gt_path),
        "--predictions",
        str(pool),
        "--output",
        out.as_uri(),
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    board = json.loads((out / "leaderboard.json").read_text())
    assert (out / "_SUCCESS").exists()
    assert board["run"]["spark_master"] == cluster[0]
    truth = load_ground_truth(LocalFiles(), resolve(str(dev_gt_path)))
    for row in board["submissions"]:
        frame = frames[row["submission"]]
        want = evaluate(frame.query_id, frame.reference_id, frame.score.to_numpy(), truth)
        assert row["micro_ap"] == want.micro_ap, row["submission"]

    # the executors ran the archive's Python: each worker unpacked it for the application
    _, state = cluster
    unpacked = list((state / "work").glob("worker*/app-*/*/env/bin/python"))
    assert {p.parts[-6] for p in unpacked} == {"worker1", "worker2"}, unpacked
    assert not np.any([".venv" in str(p.resolve()) for p in unpacked])


def test_a_missing_archive_is_one_line(cluster, tmp_path, dev_gt_path):
    preds = tmp_path / "p.csv"
    preds.write_text("Q00000,R000001,0.5\n")
    proc = submit(
        cluster,
        tmp_path / "missing.tar.gz",
        tmp_path,
        "evaluate",
        "--ground-truth",
        str(dev_gt_path),
        "--predictions",
        str(preds),
        "--output",
        str(tmp_path / "out"),
        # one small local file is scored in process with no session (engine.py): the
        # archive matters once Spark runs
        "--engine",
        "spark",
    )
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
    lines = [x for x in (proc.stdout + proc.stderr).splitlines() if x.startswith("error:")]
    assert lines and "missing.tar.gz" in lines[0] and "not found" in lines[0], lines
