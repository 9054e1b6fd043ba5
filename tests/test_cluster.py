"""The same command on a real standalone cluster (a master and two workers on 127.0.0.1,
shared with test_cluster_archive.py: conftest's ``standalone``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from disc21spark.core import faults
from disc21spark.testing.synth import read_ground_truth_csv
from tests.conftest import cli_env, error_lines, held_pid, run_evaluate, spark_submit
from tests.test_determinism import baseline, comparable, same, scene  # noqa: F401

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
    )


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


def test_cluster_bad_input_names_the_line(cluster, tmp_path, dev_gt_path):
    """Finding the line runs Python on the executors: the job ships its package there."""
    preds = tmp_path / "preds.csv"
    preds.write_text("Q00003,R326040,0.9\nQ00001,R1,0.5\nQ00001,R1,0.7\n")
    proc = run_evaluate(
        on_cluster(cluster),
        "--quiet",
        "--ground-truth",
        str(dev_gt_path),
        "--predictions",
        str(preds),
        "--output",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
    assert error_lines(proc) == [
        f"error: {preds}: lines 2 and 3: duplicate pair (Q00001, R1) appears 2 times; "
        "the official scorer rejects duplicate predictions"
    ]
    assert not (tmp_path / "out").exists()


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
@pytest.mark.parametrize("kind,plan", [("single", "auto"), ("pool", "one-sort")])
def test_cluster_writes_the_bytes_of_local_mode(cluster, scene, baseline, tmp_path, kind, plan):  # noqa: F811
    """One submission and a pool (both plans, the per-file one in the next test) on the
    cluster, executors of their own: the same bytes as the suite's local[2] session and
    test_determinism's local[1] job, less the run record."""
    root, subs = scene
    inputs = {
        "single": ["--predictions", str(root / "team0.csv"), "--engine", "spark"],
        "pool": ["--predictions", *sorted(str(root / f"{n}.csv") for n in subs)],
    }[kind]
    proc = run_evaluate(
        on_cluster(cluster),
        "--ground-truth",
        str(root / "gt.csv"),
        *inputs,
        "--pool-plan",
        plan,
        "--quiet",
        "--output",
        str(tmp_path / kind),
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    record = json.loads((tmp_path / kind / "run.json").read_text())
    assert record["spark_master"] == cluster
    same(comparable(tmp_path / kind), baseline[kind])


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


def test_cluster_make_queries_writes_the_local_bytes(cluster, tmp_path, spark):
    """The executors of a real cluster alter and write the queries (an output named by a
    ``file:`` URI, written through Hadoop's file systems): the same files, byte for byte,
    as a local run (same seed)."""
    import numpy as np
    from PIL import Image

    from disc21spark.library import images as library
    from disc21spark.queries.job import QueryJob
    from disc21spark.queries.job import run as make_bench
    from disc21spark.queries.spec import Settings
    from disc21spark.queries.transforms import parse_tests

    lib = tmp_path / "library"
    lib.mkdir()
    for i in range(24):
        Image.fromarray(library.dead_leaves(9, i, 80, 60)).save(lib / f"img_{i:02d}.png")
    (lib / "broken.png").write_bytes(b"\x89PNG broken")
    tests = "crop:50,jumble:4x4,lowcon:70+text:10"
    settings = Settings(tuple(parse_tests(tests)), per_test=10, distractors=0.3, seed=11)
    make_bench(spark, QueryJob([str(lib)], str(tmp_path / "local"), settings))
    proc = subprocess.run(
        [
            *on_cluster(cluster),
            str(ROOT / "jobs" / "make_queries.py"),
            "--images",
            str(lib),
            "--output",
            (tmp_path / "cluster").as_uri(),
            "--tests",
            tests,
            "--queries-per-test",
            "10",
            "--distractors",
            "0.3",
            "--seed",
            "11",
            "--partitions",
            "3",
        ],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]

    def files(folder):
        return {
            p.relative_to(folder): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "run.json"
        }

    local, remote = files(tmp_path / "local"), files(tmp_path / "cluster")
    assert local.keys() == remote.keys() and len(local) > 30
    assert [k for k in local if local[k] != remote[k]] == []
    assert np.any([b"broken.png" in v for v in local.values()])
