"""What the DAGs compute around the jobs (no scheduler, no Spark): run folders by logical
date, the pool's fingerprint, the previous run, the spark-submit settings, publishing."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from disc21spark import scheduled
from disc21spark.core import output
from disc21spark.core.board_files import PARTS
from disc21spark.core.errors import InputError, OutputError
from tests.pool_helpers import published_board

DAY = datetime(2026, 11, 30, tzinfo=timezone.utc)


def params(tmp_path, **more) -> dict:
    return {
        "pool": str(tmp_path / "pool"),
        "ground_truth": str(tmp_path / "gt.csv"),
        "runs": str(tmp_path / "runs"),
        "latest": "",
        "project": "/srv/disc21spark",
        "evaluate_args": [],
        **more,
    }


def test_run_tag_is_the_utc_logical_date_without_colons():
    assert scheduled.run_tag(DAY) == "2026-11-30T000000Z"
    paris = timezone(timedelta(hours=1))
    assert scheduled.run_tag(datetime(2026, 11, 30, 1, 2, 3, tzinfo=paris)) == "2026-11-30T000203Z"


def test_pool_state_changes_with_the_files_and_ignores_hidden_ones(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "a.csv").write_text("Q1,R1,0.5\n")
    (pool / ".a.csv.crc").write_text("x")
    (pool / "_SUCCESS").write_text("")
    first = scheduled.pool_state(str(pool))
    assert list(first) == ["a.csv"] and first["a.csv"][0] == 10
    (pool / "b.csv").write_text("Q1,R1,0.5\n")
    assert set(scheduled.pool_state(str(pool))) == {"a.csv", "b.csv"}
    os.utime(pool / "a.csv", ns=(1, 1))  # rewritten with the same size
    assert scheduled.pool_state(str(pool))["a.csv"] != first["a.csv"]
    with pytest.raises(InputError, match="not a folder"):
        scheduled.pool_state(str(tmp_path / "missing"))


def test_first_run_has_no_previous_and_a_dated_folder(tmp_path):
    plan = scheduled.plan_pool_run(params(tmp_path, evaluate_args=["--max-results", 0]), DAY)
    out = str(tmp_path / "runs" / "2026-11-30T000000Z")
    assert plan["output"] == out and plan["previous"] is None
    assert plan["application"] == "/srv/disc21spark/jobs/evaluate.py"
    assert plan["args"] == [
        "--ground-truth",
        str(tmp_path / "gt.csv"),
        "--predictions",
        str(tmp_path / "pool"),
        "--output",
        out,
        "--overwrite",
        "--max-results",
        "0",
    ]


def test_missing_required_param_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="param pool: is required"):
        scheduled.plan_pool_run(params(tmp_path, pool=""), DAY)


def publish_run(tmp_path, when: datetime, state: dict | None = None) -> str:
    plan = scheduled.plan_pool_run(params(tmp_path), when)
    os.makedirs(plan["output"])
    latest = scheduled.latest_path(str(tmp_path / "runs"))
    scheduled.publish(plan["output"], latest, {"pool_state": state or {}})
    return plan["output"]


def test_previous_is_the_last_published_run_never_the_output_itself(tmp_path):
    first = publish_run(tmp_path, DAY)
    second_day = DAY + timedelta(days=1)
    assert scheduled.plan_pool_run(params(tmp_path), second_day)["previous"] == first
    second = publish_run(tmp_path, second_day)
    latest = tmp_path / "runs" / "latest"
    assert latest.is_symlink() and os.readlink(latest) == "2026-12-01T000000Z"
    assert latest.resolve() == tmp_path / "runs" / "2026-12-01T000000Z"
    # a rerun of the second date: its previous is the first run, not the folder it replaces
    assert scheduled.plan_pool_run(params(tmp_path), second_day)["previous"] == first
    assert scheduled.last_run(latest) == tmp_path / "runs" / "2026-12-01T000000Z"
    assert json.loads((tmp_path / "runs" / second / scheduled.RECORD).read_text()) == {
        "pool_state": {}
    }


def test_a_run_folder_without_record_is_not_a_previous_run(tmp_path):
    (tmp_path / "runs" / "2026-11-29T000000Z").mkdir(parents=True)  # a failed run's debris
    assert scheduled.plan_pool_run(params(tmp_path), DAY)["previous"] is None


def test_has_changed_against_the_published_state(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "a.csv").write_text("Q1,R1,0.5\n")
    latest = scheduled.latest_path(str(tmp_path / "runs"))
    changed, state = scheduled.has_changed(str(pool), latest)
    assert changed  # nothing published yet
    publish_run(tmp_path, DAY, state)
    assert scheduled.has_changed(str(pool), latest) == (False, state)
    (pool / "a.csv").write_text("Q1,R1,0.75\n")
    assert scheduled.has_changed(str(pool), latest)[0]


def test_publish_refuses_to_replace_a_real_folder(tmp_path):
    (tmp_path / "runs" / "latest").mkdir(parents=True)
    (tmp_path / "runs" / "x").mkdir()
    with pytest.raises(InputError, match="not a symlink"):
        scheduled.publish(str(tmp_path / "runs" / "x"), tmp_path / "runs" / "latest", {})
    with pytest.raises(InputError, match="no output folder"):
        scheduled.publish(str(tmp_path / "nothing"), tmp_path / "elsewhere", {})


def test_submit_settings_for_a_virtualenv_and_for_an_archive(tmp_path):
    venv = scheduled.submit_settings(
        params(
            tmp_path,
            master="local[2]",
            spark_conf={"spark.driver.memory": "2g"},
            env={"SPARK_LOCAL_IP": "127.0.0.1"},
        )
    )
    assert venv["master"] == "local[2]"
    assert venv["conf"] == {
        "spark.pyspark.python": "/srv/disc21spark/.venv/bin/python",
        "spark.driver.memory": "2g",
    }
    assert venv["env"]["PATH"].startswith("/srv/disc21spark/.venv/bin" + os.pathsep)
    assert venv["env"]["PYSPARK_DRIVER_PYTHON"] == "/srv/disc21spark/.venv/bin/python"
    assert venv["env"]["SPARK_CONF_DIR"] == "/srv/disc21spark/disc21spark/conf"
    assert venv["env"]["PYTHONPATH"] == "/srv/disc21spark"
    assert venv["env"]["SPARK_LOCAL_IP"] == "127.0.0.1"
    packed = scheduled.submit_settings(
        params(
            tmp_path,
            python_env="archive",
            archive="/dist/env.tar.gz",
            driver_python="/usr/bin/python3",
        )
    )
    assert packed["conf"] == {
        "spark.archives": "/dist/env.tar.gz#env",
        "spark.pyspark.python": "./env/bin/python",
        "spark.pyspark.driver.python": "/usr/bin/python3",
    }
    assert packed["env"]["PYSPARK_PYTHON"] == "./env/bin/python"
    with pytest.raises(InputError, match="python_env"):
        scheduled.submit_settings(params(tmp_path, python_env="conda"))


def test_bench_plan_chains_the_three_jobs_in_one_folder(tmp_path):
    plan = scheduled.plan_bench_run(
        params(
            tmp_path,
            library_size=30,
            seed=3,
            tests="crop:50",
            queries_per_test=4,
            distractors=0.25,
            methods="tiny",
            rank_eval_args=["--subsets", "2"],
        ),
        DAY,
    )
    folder = tmp_path / "runs" / "2026-11-30T000000Z"
    assert plan["output"] == str(folder)
    assert plan["args"]["make_queries"][:2] == ["--images", str(folder / "library")]
    assert plan["args"]["rank_eval"][:2] == ["--bench", str(folder / "bench")]
    assert plan["args"]["rank_eval"][-2:] == ["--subsets", "2"]
    assert plan["applications"]["rank_eval"] == "/srv/disc21spark/jobs/rank_eval.py"


def test_a_trigger_of_0_1_0_names_the_methods_descriptors(tmp_path, caplog):
    """Airflow merges the trigger's conf over the DAG's defaults: ``methods`` (the DAG's
    default) and the old ``descriptors`` (the trigger's) are both there; the trigger's
    wins, with a warning."""
    bench = dict(library_size=30, seed=3, tests="crop:50", queries_per_test=4, distractors=0)
    given = params(tmp_path, **bench, methods="colorhist,tiny", descriptors="pdq")
    with caplog.at_level("WARNING", logger="disc21spark"):
        plan = scheduled.plan_bench_run(given, DAY)
    rank = plan["args"]["rank_eval"]
    assert rank[rank.index("--methods") + 1] == "pdq"
    assert "'descriptors' is deprecated, use 'methods'" in caplog.text


def test_exit_codes_decide_retries():
    """Exit 2 (bad input or output) is never retried; 143 (stopped, a lost machine or
    executor) and 1 are; the code is read from the SparkSubmitHook's error."""
    from disc21spark.scheduled import exit_code_of, retry_decision

    message = "Cannot execute: spark-submit --master local[2] jobs/evaluate.py. Error code is: 2."
    assert exit_code_of(message) == 2
    assert exit_code_of("some other failure") is None
    assert retry_decision(2) == (False, retry_decision(2)[1])
    assert "retrying cannot help" in retry_decision(2)[1]
    assert [retry_decision(code)[0] for code in (143, 130, 1, -9, None)] == [True] * 5


def test_with_private_queries_each_run_writes_its_private_board_apart(tmp_path):
    given = params(
        tmp_path, private_queries="/c/private.csv", private_runs=str(tmp_path / "private")
    )
    plan = scheduled.plan_pool_run(given, DAY)
    private = str(tmp_path / "private" / "2026-11-30T000000Z")
    assert plan["private_output"] == private
    assert plan["args"][-4:] == ["--private-queries", "/c/private.csv", "--private-output", private]
    assert scheduled.plan_pool_run(params(tmp_path), DAY)["private_output"] is None
    with pytest.raises(InputError, match="param private_runs: is required with private_queries"):
        scheduled.plan_pool_run(params(tmp_path, private_queries="/c/p.csv"), DAY)
    for inside in (tmp_path / "runs" / "private", tmp_path / "runs", tmp_path):
        with pytest.raises(InputError, match="param private_runs: must be apart from runs"):
            scheduled.plan_pool_run({**given, "private_runs": str(inside)}, DAY)


def a_board(folder, sha: str = "a" * 64, board: str | None = None, teams: int = 2):
    """A folder as a pool run publishes it (``pool_helpers.published_board``)."""
    return published_board(folder, sha, board, teams)


def test_freeze_and_reveal_copy_the_latest_boards_frozen(tmp_path):
    """freeze: the public board ``latest`` points to, copied whole to ``frozen`` with
    FROZEN.json; reveal: that run's private board to ``revealed``. No run's output
    replaces either copy, and a retried step finds its copy made."""
    given = params(
        tmp_path,
        private_runs=str(tmp_path / "private"),
        frozen=str(tmp_path / "official"),
        revealed=str(tmp_path / "final"),
    )
    with pytest.raises(InputError, match="latest: no successful run yet"):
        scheduled.freeze_latest(given)
    run = publish_run(tmp_path, DAY)
    a_board(tmp_path / "runs" / run, board="public", teams=3)
    with pytest.raises(InputError, match="the latest run .2026-11-30T000000Z. wrote no private"):
        scheduled.reveal_latest(given)
    a_board(tmp_path / "private" / "2026-11-30T000000Z", board="private")

    frozen = scheduled.freeze_latest(given)
    assert frozen == str(tmp_path / "official")
    doc = json.loads((tmp_path / "official" / "FROZEN.json").read_text())
    assert doc["board"] == "public" and doc["submissions"] == 3
    assert doc["ground_truth_sha256"] == "a" * 64
    assert doc["copied_from"] == str(tmp_path / "runs" / run)
    names = {p.name for p in (tmp_path / "official").iterdir()}
    assert names == {*PARTS, "leaderboard.html", scheduled.RECORD, "FROZEN.json"}
    assert scheduled.freeze_latest(given) == frozen  # retried: nothing to do
    revealed = scheduled.reveal_latest(given)
    assert json.loads((tmp_path / "final" / "FROZEN.json").read_text())["board"] == "private"
    for path in (frozen, revealed):
        with pytest.raises(OutputError, match="a frozen board, which no run replaces"):
            output.check_writable(path, overwrite=True)
    assert not list(tmp_path.glob(".*freezing*"))  # no staging folder left behind


def test_a_freeze_never_replaces_a_folder_and_needs_a_board(tmp_path):
    board = a_board(tmp_path / "board")
    (tmp_path / "taken").mkdir()
    with pytest.raises(OutputError, match="taken: exists .a frozen board is copied to a new"):
        scheduled.frozen.freeze_board(board, tmp_path / "taken")
    assert not list((tmp_path / "taken").iterdir())
    with pytest.raises(OutputError, match="inside the board it would copy"):
        scheduled.frozen.freeze_board(board, board / "copy")
    with pytest.raises(OutputError, match="nowhere: parent folder does not exist"):
        scheduled.frozen.freeze_board(board, tmp_path / "nowhere" / "copy")
    with pytest.raises(InputError, match="missing: no such folder"):
        scheduled.frozen.freeze_board(tmp_path / "missing", tmp_path / "copy")
    with pytest.raises(InputError, match="taken: no leaderboard.json there: not a board"):
        scheduled.frozen.freeze_board(tmp_path / "taken", tmp_path / "copy")
    (board / "leaderboard.json").write_text("{}")
    with pytest.raises(InputError, match="leaderboard.json: not a leaderboard this tool wrote"):
        scheduled.frozen.freeze_board(board, tmp_path / "copy")
    assert not (tmp_path / "copy").exists()
    with pytest.raises(InputError, match="param frozen: is required"):
        scheduled.freeze_latest(params(tmp_path))
