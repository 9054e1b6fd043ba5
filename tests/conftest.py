"""One local SparkSession for the whole suite: Spark start-up costs seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_GT = ROOT.parent / "shared" / "data" / "disc21_dev_ground_truth.csv"
DEV_GT = ROOT / "data" / "disc21_dev_ground_truth.csv"

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session")
def spark():
    from disc21spark.core.session import spark_session

    session = spark_session(
        "local",
        master="local[2]",
        conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "1g",
        },
        app_name="disc21spark-tests",
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dev_gt_path() -> Path:
    """The public DISC21 dev ground truth (shared copy when present, else the project's)."""
    return SHARED_GT if SHARED_GT.exists() else DEV_GT


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
