"""The same command on a real standalone cluster (a master and two workers on 127.0.0.1,
shared with test_cluster_archive.py: conftest's ``standalone``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from disc21spark.core import faults
from disc21spark.testing.synth import read_ground_truth_csv
from tests.conftest import JVM_OPTIONS, cli_env, error_lines, held_pid, spark_submit
from tests.scenes import comparable, same

ROOT = Path(__file__).resolve().parents[1]
# one xdist worker runs every cluster test (conftest.ONE_WORKER): they share one cluster
pytestmark = pytest.mark.cluster


@pytest.fixture
def cluster(standalone) -> str:
    """The suite's standalone cluster (conftest): its master's URL."""
    return standalone[0]


def on_cluster(master: str) -> list[str]:
    return spark_submit(
        "--master",
        master,
        "--executor-memory",
        "1g",
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        # the executors' JVMs as the suite's drivers (conftest.JVM_OPTIONS): jobs of seconds
        "--conf",
        f"spark.executor.extraJavaOptions={JVM_OPTIONS}",
    )


QUERY_TESTS = "crop:50,jumble:4x4,lowcon:70+text:10"


class Application:
    """What one application of the cluster ran (tests/cluster_commands.py): its master,
    its folder and, per command, its exit code and what it printed (as a process's)."""

    def __init__(self, master: str, folder: Path, done: dict[str, subprocess.CompletedProcess]):
        self.master, self.folder, self.done = master, folder, done


def image_library(folder: Path) -> Path:
    from PIL import Image

    from disc21spark.library import images as library

    folder.mkdir()
    for i in range(24):
        Image.fromarray(library.dead_leaves(9, i, 80, 60)).save(folder / f"img_{i:02d}.png")
    (folder / "broken.png").write_bytes(b"\x89PNG broken")
    return folder


@pytest.fixture(scope="module")
def one_application(standalone, scene, tmp_path_factory, dev_gt_path) -> Application:  # noqa: F811
    """A bad submission, one submission, a pool (distributed plan) and make-queries into a
    ``file:`` URI: four commands in one spark-submit (tests/cluster_commands.py), so the
    cluster starts its executors once, not four times."""
    master = standalone[0]
    root, subs = scene
    work = tmp_path_factory.mktemp("one_application")
    (work / "preds.csv").write_text("Q00003,R326040,0.9\nQ00001,R1,0.5\nQ00001,R1,0.7\n")
    evaluate = ["evaluate", "--quiet", "--ground-truth"]
    commands = {
        "bad": [*evaluate, str(dev_gt_path), "--predictions", str(work / "preds.csv")]
        + ["--engine", "spark", "--output", str(work / "bad")],
        "single": [*evaluate, str(root / "gt.csv"), "--predictions", str(root / "team0.csv")]
        + ["--engine", "spark", "--pool-plan", "auto", "--output", str(work / "single")],
        "pool": [*evaluate, str(root / "gt.csv"), "--predictions"]
        + sorted(str(root / f"{n}.csv") for n in subs)
        + ["--pool-plan", "distributed", "--output", str(work / "pool")],
        "queries": ["make-queries", "--images", str(image_library(work / "library"))]
        + ["--output", (work / "queries").as_uri(), "--tests", QUERY_TESTS]
        + ["--queries-per-test", "10", "--distractors", "0.3", "--seed", "11"]
        + ["--image-partitions", "3"],
    }
    results = work / "results.json"
    proc = subprocess.run(
        [*on_cluster(master), str(ROOT / "tests" / "cluster_commands.py"), str(results)]
        + [arg for argv in commands.values() for arg in ("--", *argv)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=900,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    done = {
        name: subprocess.CompletedProcess(r["argv"], r["code"], r["stdout"], r["stderr"])
        for name, r in zip(commands, json.loads(results.read_text()))
    }
    return Application(master, work, done)


def killing_a_worker(cmd: list[str], marker: Path, partition: int) -> subprocess.CompletedProcess:
    """Run ``cmd`` (a spark-submit) with the first attempt of task ``partition`` held; kill
    that task's Python worker with SIGKILL from outside, as the kernel's OOM killer or an
    operator would, and let the job finish."""
    hold = f"spark.executorEnv.{faults.HOLD_FIRST_ATTEMPT}={partition}:{marker}"
    proc = subprocess.Popen(
        [cmd[0], "--conf", hold, *cmd[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    worker = held_pid(proc, marker, f"task {partition}")
    os.kill(worker, signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    with pytest.raises(ProcessLookupError):
        os.kill(worker, 0)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_cluster_bad_input_names_the_line(one_application):
    """Finding the line runs Python on the executors: the job ships its package there."""
    app = one_application
    assert app.done["bad"].returncode == 2, app.done["bad"]
    assert error_lines(app.done["bad"]) == [
        f"error: {app.folder / 'preds.csv'}: lines 2 and 3: duplicate pair (Q00001, R1) appears 2 times; "
        "the official scorer rejects duplicate predictions"
    ]
    assert not (app.folder / "bad").exists()


def test_cluster_descriptor_track_gives_the_local_result(cluster, tmp_path, dev_gt_path, spark):
    """The index is broadcast in shards to the cluster's executors; the query files are
    read there (the same machine: a shared file system). Inputs and output are named by
    ``file:`` URIs (read and written through Hadoop's file systems). A search task's
    Python worker is killed mid-task (SIGKILL): the retried task gives the same figures."""
    from disc21spark.descriptors.job import DescriptorJob, run
    from disc21spark.testing.synth import write_descriptor_set

    gt = read_ground_truth_csv(dev_gt_path).iloc[:5000]
    gt_path = tmp_path / "gt.csv"
    gt.to_csv(gt_path, index=False)
    q, r = write_descriptor_set(gt, tmp_path / "set", 8000, 32, 1.2, seed=4)
    local = run(spark, DescriptorJob(str(gt_path), [str(q)], [str(r)], None, max_results=20_000))
    out = tmp_path / "out"
    # and one search task's Python worker is killed mid-task: Spark's retry changes nothing
    proc = killing_a_worker(
        [
            *on_cluster(cluster),
            str(ROOT / "jobs" / "evaluate.py"),
            "--ground-truth",
            str(gt_path),
            "--query-descriptors",
            q.as_uri(),
            "--reference-descriptors",
            r.as_uri(),
            "--max-results",
            "20000",
            "--broadcast-limit",
            "400K",
            "--query-partitions",
            "3",
            "--output",
            out.as_uri(),
        ],
        tmp_path / "worker.pid",
        partition=1,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["run"]["spark_master"] == cluster and doc["run"]["reference_shards"] == 3
    for key, value in local.to_dict().items():
        assert doc[key] == value, key


# the pool's per-file plan is the next test's run: a killed worker, the calm bytes
@pytest.mark.parametrize("kind", ["single", "pool"])
def test_cluster_writes_the_bytes_of_local_mode(one_application, baseline, kind):  # noqa: F811
    """One submission (the distributed plan) and a pool (the distributed plan; the per-file
    one in the next test) on the cluster, executors of their own: the same bytes as the
    suite's local[2] session and test_determinism's local[1] job, less the run record."""
    app = one_application
    assert app.done[kind].returncode == 0, app.done[kind].stderr[-3000:]
    record = json.loads((app.folder / kind / "run.json").read_text())
    assert record["spark_master"] == app.master
    same(comparable(app.folder / kind), baseline[kind])


def test_cluster_pool_survives_a_killed_python_worker(cluster, scene, baseline, tmp_path):  # noqa: F811
    """The per-file plan's second task: its Python worker is killed (SIGKILL) while it
    scores; Spark runs the task again and the leaderboard is byte for byte the calm one,
    local mode's (so this run is also the per-file plan's case of the test above)."""
    root, subs = scene
    proc = killing_a_worker(
        [
            *on_cluster(cluster),
            str(ROOT / "jobs" / "evaluate.py"),
            "--ground-truth",
            str(root / "gt.csv"),
            "--predictions",
            *sorted(str(root / f"{n}.csv") for n in subs),
            "--pool-plan",
            "per-file",
            "--output",
            str(tmp_path / "pool"),
        ],
        tmp_path / "worker.pid",
        partition=1,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    same(comparable(tmp_path / "pool"), baseline["pool"])


def test_cluster_make_queries_writes_the_local_bytes(one_application, tmp_path, spark):
    """The executors of a real cluster alter and write the queries (an output named by a
    ``file:`` URI, written through Hadoop's file systems): the same files, byte for byte,
    as a local run (same seed)."""
    from disc21spark.queries.job import QueryJob
    from disc21spark.queries.job import run as make_bench
    from disc21spark.queries.spec import Settings
    from disc21spark.queries.transforms import parse_tests

    app = one_application
    assert app.done["queries"].returncode == 0, app.done["queries"].stderr[-3000:]
    settings = Settings(tuple(parse_tests(QUERY_TESTS)), per_test=10, distractors=0.3, seed=11)
    make_bench(spark, QueryJob([str(app.folder / "library")], str(tmp_path / "local"), settings))

    def files(folder):
        return {
            p.relative_to(folder): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "run.json"
        }

    local, remote = files(tmp_path / "local"), files(app.folder / "queries")
    assert local.keys() == remote.keys() and len(local) > 30
    assert [k for k in local if local[k] != remote[k]] == []
    assert np.any([b"broken.png" in v for v in local.values()])
