"""One local SparkSession for the whole suite: Spark start-up costs seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# module-scoped scenes several test modules share (a descriptor set, a Howe bench, a pool)
pytest_plugins = ["tests.scenes"]
SHARED_GT = ROOT.parent / "shared" / "data" / "disc21_dev_ground_truth.csv"
DEV_GT = ROOT / "data" / "disc21_dev_ground_truth.csv"

# the least each command needs
MINIMAL = {
    "evaluate": ["--ground-truth", "gt.csv", "--predictions", "p.csv", "--output", "o"],
    "make-library": ["--output", "o", "--size", "3"],
    "make-queries": ["--images", "lib", "--output", "o"],
    "extract": ["--images", "lib", "--method", "tiny", "--output", "o.h5"],
    "rank-eval": ["--bench", "b", "--output", "o"],
}
DESCRIPTORS = ["--query-descriptors", "q.h5", "--reference-descriptors", "r.h5"]

# not Spark's 7077: a cluster a developer started with `make cluster-start` keeps running
STANDALONE_PORT = "17077"

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# every driver JVM of the suite (its session's, and each job it starts as a process, which
# inherits this through spark-submit) compiles with C1 only and collects with one thread:
# the suite's jobs last seconds, and C2's compiler threads then cost more CPU than they
# save (a 25,000-pair evaluate on Spark: 16 s of CPU instead of 30 s). Results do not
# depend on it; the product's own JVMs keep Java's defaults.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ.setdefault("SPARK_SUBMIT_OPTS", JVM_OPTIONS)
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", JVM_OPTIONS)  # the standalone cluster's


# the tests that share the standalone cluster (fixed ports, one make dist archive): under
# pytest-xdist one worker runs them all, as one unit, while the others take the rest test
# by test. (xdist's own xdist_group mark groups nothing under pytest 9.2: xdist#1386.)
ONE_WORKER = ("test_cluster.py", "test_cluster_archive.py")
# files whose module fixtures take long to build (a wheel installed into a fresh
# virtualenv; two pools scored to boards): each file one unit, so one worker builds them
# once, where two workers each built their own (24 s and 11 s, twice)
ONE_UNIT = ("test_wheel.py", "test_board_files.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``-n N`` (xdist's ``load``): every test its own unit, but ``ONE_WORKER``'s files one
    unit together and each of ``ONE_UNIT``'s files a unit. The unit of most tests goes
    first (xdist's loadscope reorder): the cluster's, while it holds more tests than any
    file of ``ONE_UNIT``, so the cluster tests start at once instead of ending the run."""
    if config.getoption("dist") not in ("load", "loadgroup"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            name = Path(nodeid.split("::", 1)[0]).name
            if name in ONE_WORKER:
                return "cluster"
            return name if name in ONE_UNIT else nodeid

    return Scheduling(config, log)


@pytest.fixture(scope="session")
def spark():
    from disc21spark.core.session import spark_session

    session = spark_session(
        "local",
        master="local[2]",
        conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "2g",  # the local profile's
        },
        app_name="disc21spark-tests",
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dev_gt_path() -> Path:
    """The public DISC21 dev ground truth (shared copy when present, else the project's)."""
    return SHARED_GT if SHARED_GT.exists() else DEV_GT


def clean_env() -> dict[str, str]:
    """A fresh shell's environment: no virtualenv on PATH, no Python settings for Spark."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_"))}
    env.update(SPARK_SUBMIT_OPTS=JVM_OPTIONS, SPARK_DAEMON_JAVA_OPTS=JVM_OPTIONS)
    env.pop("VIRTUAL_ENV", None)
    return {**env, "PATH": path, "SPARK_LOCAL_IP": "127.0.0.1"}


@pytest.fixture(scope="session")
def standalone(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """One standalone cluster for every ``cluster`` test: starting one costs a master and
    two worker JVMs, and the tests only need its executors to be their own. A master and
    two one-core workers (1500 MB each) on 127.0.0.1, started from the installed PySpark
    in a fresh shell's environment, so that its nodes have no project Python (a job names
    its interpreter or brings make dist's archive). Yields the master's URL and the
    cluster's state folder (``work/worker<N>/app-*``: what the executors unpacked)."""
    state = tmp_path_factory.mktemp("standalone")
    env = {
        **clean_env(),
        "SPARK_STANDALONE_DIR": str(state),
        "SPARK_MASTER_PORT": STANDALONE_PORT,
        "VENV": str(Path(sys.executable).parents[1]),
        "WORKERS": "2",
        "SPARK_WORKER_CORES": "1",
        "SPARK_WORKER_MEMORY": "1500m",
    }
    script = ROOT / "scripts" / "standalone.sh"
    started = subprocess.run(
        [str(script), "start"], env=env, capture_output=True, text=True, timeout=180
    )
    assert started.returncode == 0, started.stdout + started.stderr
    yield f"spark://127.0.0.1:{STANDALONE_PORT}", state
    subprocess.run([str(script), "stop"], env=env, timeout=60)


def cli_env() -> dict:
    """Environment for a job started as its own process (python or spark-submit)."""
    env = dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_CONF_DIR=str(ROOT / "disc21spark" / "conf"),
    )
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


def run_evaluate(launcher: list[str], *args: str) -> subprocess.CompletedProcess:
    """jobs/evaluate.py as a user starts it: ``launcher`` is python or spark-submit + options."""
    return subprocess.run(
        [*launcher, str(ROOT / "jobs" / "evaluate.py"), *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=600,
    )


def spark_submit(*options: str) -> list[str]:
    return [str(Path(sys.executable).parent / "spark-submit"), *options]


def without_root_file_access() -> list[str]:
    """A command prefix under which root obeys file permissions, as any user does: uid 0
    kept, the capabilities that ignore permissions given up. Empty for other users."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def held_pid(proc: subprocess.Popen, marker: Path, what: str) -> int:
    """The process id a fault point (``core/faults.py``) wrote to ``marker`` once ``proc``
    reached it; the job is stopped and its output shown if it ends or takes 5 minutes."""
    deadline = time.monotonic() + 300
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"never reached {what}:\n{(out + err)[-3000:]}")
        time.sleep(0.1)
    return int(marker.read_text())


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    """The `error:` lines a job printed (spark-submit merges stderr into stdout)."""
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("error:")]
