"""The DAGs of dags/ in a real Airflow (``make test-airflow``): they import with no error,
and the pool DAG runs end to end with ``airflow dags test`` against local Spark — the
leaderboard published to latest, a second run reusing every unchanged submission, a
changed file rescored, a run with nothing new skipped — and the Howe benchmark DAG
rebuilds a tiny benchmark and its report.

Airflow lives in its own virtualenv (``DISC21SPARK_AIRFLOW_VENV``, made by the make
target) with a throwaway metadata database; without it the module is skipped, so that
``make test`` stays fast.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from disc21spark.testing import synth

ROOT = Path(__file__).resolve().parents[1]
VENV = os.environ.get("DISC21SPARK_AIRFLOW_VENV", "")
pytestmark = pytest.mark.skipif(
    not VENV, reason="needs the Airflow virtualenv: run `make test-airflow`"
)
DAYS = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]


@pytest.fixture
def tmp_path():
    """A folder of this module's own: pytest's numbered folders are removed by any other
    pytest run on the machine once three newer ones exist, and these runs take minutes."""
    folder = Path(tempfile.mkdtemp(prefix="disc21spark-airflow-test-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def airflow():
    """Runs the airflow command of the Airflow virtualenv on a fresh metadata database."""
    home = Path(tempfile.mkdtemp(prefix="disc21spark-airflow-home-"))
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        # the sensor looks every second and gives up after 5 s (a run with nothing new)
        "DISC21SPARK_POKE_SECONDS": "1",
        "DISC21SPARK_WAIT_SECONDS": "5",
        # a retried task is retried at once here: a retry that should not happen shows
        "DISC21SPARK_RETRIES": "2",
        "DISC21SPARK_RETRY_SECONDS": "1",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    env.pop("PYSPARK_GATEWAY_PORT", None)

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [str(Path(VENV) / "bin" / "airflow"), *args],
            env=env,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if check and proc.returncode != 0:
            tail = (proc.stdout + proc.stderr)[-6000:]
            pytest.fail(f"airflow {' '.join(args[:3])} exited {proc.returncode}:\n{tail}")
        return proc

    run("db", "migrate")
    run.home = home  # the metadata database is home/airflow.db
    yield run
    shutil.rmtree(home, ignore_errors=True)


def last_json(text: str) -> object:
    """The JSON document a CLI printed (log lines may come before it)."""
    line = next(line for line in reversed(text.splitlines()) if line.startswith(("[", "{")))
    return json.loads(line)


def test_dags_import_with_no_errors(airflow):
    assert last_json(airflow("dags", "list-import-errors", "--local", "-o", "json").stdout) == []
    dags = last_json(airflow("dags", "list", "--local", "-o", "json").stdout)
    assert {d["dag_id"] for d in dags} == {"disc21spark_pool", "disc21spark_howe_bench"}


def make_pool(folder: Path) -> Path:
    """300 queries of the dev ground truth and 3 small synthetic submissions."""
    gt = synth.read_ground_truth_csv(ROOT / "data" / "disc21_dev_ground_truth.csv").iloc[:300]
    gt.to_csv(folder / "gt.csv", index=False)
    (folder / "pool").mkdir()
    for i, name in enumerate(["team_a", "team_b", "team_c"]):
        frame = synth.simulate_submission(gt, 1500, seed=i, recall=0.4 + 0.2 * i)
        synth.write_submission(frame, folder / "pool" / f"{name}.csv")
    return folder


def leaderboard(folder: Path) -> dict[str, dict]:
    rows = json.loads((folder / "leaderboard.json").read_text())["submissions"]
    return {r["submission"]: r for r in rows}


def test_pool_dag_end_to_end(airflow, tmp_path):
    base = make_pool(tmp_path)
    runs = base / "runs"
    conf = {
        "pool": str(base / "pool"),
        "ground_truth": str(base / "gt.csv"),
        "runs": str(runs),
        "master": "local[2]",
        "spark_conf": {"spark.sql.shuffle.partitions": "4"},
        "virtualenv": str(Path(sys.executable).parents[1]),
    }

    def dag_test(day: str, **more) -> None:
        airflow(
            "dags",
            "test",
            "disc21spark_pool",
            f"{day}T00:00:00+00:00",
            "-c",
            json.dumps({**conf, **more}),
        )

    # 1: everything scored, published
    dag_test(DAYS[0])
    first = runs / "2026-11-01T000000Z"
    assert (runs / "latest").resolve() == first
    board = leaderboard(runs / "latest")
    assert sorted(board) == ["team_a", "team_b", "team_c"]
    assert all(r["status"] == "ok" and not r["reused"] for r in board.values())
    assert board["team_c"]["rank"] == 1  # the best recall wins
    assert (runs / "latest" / "leaderboard.html").stat().st_size > 1000
    record = json.loads((first / "scheduled_run.json").read_text())
    assert record["previous"] is None and sorted(record["pool_state"]) == [
        "team_a.csv",
        "team_b.csv",
        "team_c.csv",
    ]

    # 2: nothing changed, run anyway: every submission reused from run 1
    dag_test(DAYS[1], wait_for_change=False)
    second = runs / "2026-11-02T000000Z"
    assert (runs / "latest").resolve() == second
    again = leaderboard(second)
    assert all(r["reused"] for r in again.values())
    assert {k: r["micro_ap"] for k, r in again.items()} == {
        k: r["micro_ap"] for k, r in board.items()
    }
    assert json.loads((second / "scheduled_run.json").read_text())["previous"] == str(first)

    # 3: one file changed: the sensor sees it, that file alone is rescored
    gt = synth.read_ground_truth_csv(base / "gt.csv")
    frame = synth.simulate_submission(gt, 1500, seed=9, recall=0.95)
    synth.write_submission(frame, base / "pool" / "team_b.csv")
    dag_test(DAYS[2])
    third = leaderboard(runs / "2026-11-03T000000Z")
    assert (runs / "latest").resolve() == runs / "2026-11-03T000000Z"
    assert {k: r["reused"] for k, r in third.items()} == {
        "team_a": True,
        "team_b": False,
        "team_c": True,
    }
    assert third["team_b"]["checksum"] != board["team_b"]["checksum"]
    assert third["team_b"]["rank"] == 1

    # 4: nothing new within the wait: the run is skipped, latest stays on run 3
    dag_test(DAYS[3])
    assert not (runs / "2026-11-04T000000Z").exists()
    assert (runs / "latest").resolve() == runs / "2026-11-03T000000Z"


def test_howe_bench_dag_end_to_end(airflow, tmp_path):
    runs = tmp_path / "bench_runs"
    conf = {
        "runs": str(runs),
        "library_size": 30,
        "seed": 3,
        "tests": "crop:50,lowcon:80",
        "queries_per_test": 4,
        "distractors": 0.25,
        "methods": "colorhist,tiny",
        "rank_eval_args": ["--resamples", "50"],
        "master": "local[2]",
        "virtualenv": str(Path(sys.executable).parents[1]),
    }
    airflow(
        "dags",
        "test",
        "disc21spark_howe_bench",
        f"{DAYS[0]}T00:00:00+00:00",
        "-c",
        json.dumps(conf),
    )
    folder = runs / "2026-11-01T000000Z"
    assert (runs / "latest").resolve() == folder
    assert (folder / "library" / "library.csv").exists()
    assert (folder / "bench" / "ground_truth.csv").exists()
    report = (runs / "latest" / "report" / "report.md").read_text()
    assert "colorhist" in report and "tiny" in report
    summary = json.loads((folder / "report" / "rank_eval.json").read_text())
    assert summary  # the rank report's record is there and readable


def test_bad_input_fails_once_without_retries(airflow, tmp_path):
    """Exit 2 (a ground truth that is not there) is the input's fault: the evaluate
    task fails on its first try, says why in its log and is not retried, although 2
    retries 1 s apart are configured (a retriable failure would leave it up_for_retry)."""
    import sqlite3

    base = make_pool(tmp_path)
    conf = {
        "pool": str(base / "pool"),
        "ground_truth": str(base / "missing_gt.csv"),
        "runs": str(base / "runs"),
        "master": "local[2]",
        "wait_for_change": False,
        "virtualenv": str(Path(sys.executable).parents[1]),
    }
    proc = airflow(
        "dags",
        "test",
        "disc21spark_pool",
        f"{DAYS[3]}T12:00:00+00:00",
        "-c",
        json.dumps(conf),
        check=False,
    )
    text = proc.stdout + proc.stderr
    assert "retrying cannot help" in text, text[-6000:]
    with sqlite3.connect(airflow.home / "airflow.db") as db:
        rows = db.execute(
            "SELECT state, try_number FROM task_instance WHERE dag_id = 'disc21spark_pool' "
            "AND task_id = 'evaluate' AND state NOT IN ('success', 'skipped')"  # the others' runs
        ).fetchall()
    assert rows == [("failed", 1)], (rows, text[-6000:])
    assert not (base / "runs" / "latest").exists()


def test_an_organisers_steps_freeze_and_reveal(airflow, tmp_path):
    """A run with private queries publishes the public board and keeps the private one
    apart; the organiser's ``freeze`` and ``reveal`` runs copy them, frozen; a freeze to
    a folder that exists fails on its first try, with one line, and changes nothing."""
    import sqlite3

    base = make_pool(tmp_path)
    gt = synth.read_ground_truth_csv(base / "gt.csv")
    private = gt["query_id"].drop_duplicates().iloc[::2]
    private.to_frame().to_csv(base / "private.csv", index=False)
    runs, boards = base / "runs", base / "boards"
    boards.mkdir()
    conf = {
        "pool": str(base / "pool"),
        "ground_truth": str(base / "gt.csv"),
        "runs": str(runs),
        "private_queries": str(base / "private.csv"),
        "private_runs": str(base / "private_runs"),
        "master": "local[2]",
        "spark_conf": {"spark.sql.shuffle.partitions": "4"},
        "virtualenv": str(Path(sys.executable).parents[1]),
    }

    def dag_test(day: str, check: bool = True, **more) -> subprocess.CompletedProcess:
        return airflow(
            "dags",
            "test",
            "disc21spark_pool",
            f"{day}T06:00:00+00:00",
            "-c",
            json.dumps({**conf, **more}),
            check=check,
        )

    dag_test(DAYS[0])
    run = runs / "2026-11-01T060000Z"
    public, hidden = leaderboard(run), leaderboard(base / "private_runs" / run.name)
    assert sorted(public) == sorted(hidden) == ["team_a", "team_b", "team_c"]
    assert {r["micro_ap"] for r in public.values()}.isdisjoint(
        r["micro_ap"] for r in hidden.values()
    )

    dag_test(DAYS[1], step="freeze", frozen=str(boards / "official"))
    dag_test(DAYS[2], step="reveal", revealed=str(boards / "final"))
    for folder, source, board in (
        (boards / "official", run, "public"),
        (boards / "final", base / "private_runs" / run.name, "private"),
    ):
        doc = json.loads((folder / "FROZEN.json").read_text())
        assert (doc["board"], doc["copied_from"], doc["submissions"]) == (board, str(source), 3)
        assert leaderboard(folder) == leaderboard(source)
    assert not (runs / "2026-11-02T060000Z").exists()  # the steps scored nothing

    proc = dag_test(DAYS[3], check=False, step="freeze", frozen=str(boards / "final"))
    text = proc.stdout + proc.stderr
    assert "final: exists (a frozen board is copied to a new folder)" in text, text[-6000:]
    with sqlite3.connect(airflow.home / "airflow.db") as db:
        rows = db.execute(
            "SELECT state, try_number FROM task_instance WHERE dag_id = 'disc21spark_pool' "
            "AND task_id = 'freeze' AND state NOT IN ('success', 'skipped')"
        ).fetchall()
    assert rows == [("failed", 1)], (rows, text[-6000:])
    assert json.loads((boards / "final" / "FROZEN.json").read_text())["board"] == "private"
