"""disc21spark_pool: score a pool of DISC21 submissions on a schedule, incrementally.

step ─┬─ score:  wait_for_submissions → plan → evaluate (spark-submit jobs/evaluate.py) → publish
       ├─ freeze: the latest public board copied, frozen, to ``frozen``
       └─ reveal: the latest run's private board copied, frozen, to ``revealed``

* **step** is ``score`` on the schedule; an organiser triggers ``freeze`` and ``reveal``
  by hand (Trigger DAG w/ config: ``{"step": "freeze", "frozen": "/boards/official"}``).

* **wait_for_submissions** pokes the pool folder until its files differ (added, removed,
  rewritten: size and modification time) from those the last successful run scored; with
  ``wait_for_change`` off it goes on at once. Nothing new within the wait: the run is
  skipped, not failed.
* **plan** names the run folder after the logical date (``<runs>/2026-11-30T000000Z``)
  and takes the last successful run (``<runs>/latest``) as ``--previous``, so unchanged
  submissions are reused and only new or changed files are scored.
* **evaluate** runs ``jobs/evaluate.py`` with the Apache Spark provider's
  SparkSubmitOperator: master, Spark settings and the Python environment are params.
* **publish** swaps ``latest`` to the new run only after evaluate succeeded; every run
  folder is kept.
* With ``private_queries`` each run scores a public and a private board: the public one
  is the run folder ``latest`` points to, the private one goes to
  ``<private_runs>/<run>``, a folder apart from ``runs``.
* **freeze** and **reveal** copy a board to a new folder with ``FROZEN.json`` inside: no
  later run replaces it. A run on a corrected ground truth is compared to the frozen
  board with ``evaluate_args: ["--compare-to", "<frozen>"]``.

Params are described in the README ("Scheduled runs with Airflow").
"""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from airflow.sdk import DAG, Param, PokeReturnValue, task
from airflow.sdk.exceptions import AirflowFailException

# the helper beside this file: not every way of parsing DAGs puts their folder on sys.path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from disc21spark_submit import Disc21SparkSubmit, spark_params  # noqa: E402

from disc21spark import scheduled  # noqa: E402  (on sys.path thanks to disc21spark_submit)
from disc21spark.core.errors import InputError, OutputError  # noqa: E402

# how often the pool is looked at, and how long a run waits for a change before it is
# skipped (a deployment's choice, read when the DAG file is parsed)
POKE_SECONDS = float(os.environ.get("DISC21SPARK_POKE_SECONDS", 300))
WAIT_SECONDS = float(os.environ.get("DISC21SPARK_WAIT_SECONDS", 23 * 3600))
SCHEDULE = os.environ.get("DISC21SPARK_POOL_SCHEDULE", "@daily") or None
PLAN = "ti.xcom_pull(task_ids='plan')"
# the step param → the task the run goes on with (the others are skipped)
STEPS = {"score": "wait_for_submissions", "freeze": "freeze", "reveal": "reveal"}

with DAG(
    dag_id="disc21spark_pool",
    description="DISC21 pool → leaderboard, incrementally; latest published after success",
    schedule=SCHEDULE,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,  # each run's --previous is the one before: never two at once
    # retried on 143 and other failures, never on bad input (Disc21SparkSubmit)
    default_args=scheduled.retry_settings(),
    render_template_as_native_obj=True,  # arguments, settings and environment stay lists/dicts
    doc_md=__doc__,
    tags=["disc21spark"],
    params={
        "pool": Param("", type="string", description="folder of submission files"),
        "ground_truth": Param("", type="string", description="ground truth CSV or Parquet"),
        "runs": Param("", type="string", description="folder of the run folders"),
        "latest": Param(
            "", type="string", description="the published symlink (empty: <runs>/latest)"
        ),
        "evaluate_args": Param(
            [],
            type="array",
            description='more options of jobs/evaluate.py, e.g. ["--max-results", "0"]',
        ),
        "step": Param(
            "score",
            enum=list(STEPS),
            description="score the pool (the schedule's); freeze or reveal (by hand)",
        ),
        "private_queries": Param(
            "", type="string", description="the private board's queries (empty: one board)"
        ),
        "private_runs": Param(
            "", type="string", description="folder of the private boards, apart from runs"
        ),
        "frozen": Param("", type="string", description="freeze: the new folder of the copy"),
        "revealed": Param("", type="string", description="reveal: the new folder of the copy"),
        "wait_for_change": Param(
            True, type="boolean", description="wait for new or changed submission files"
        ),
        **spark_params(),
    },
):

    @task.branch
    def step(params: dict | None = None) -> str:
        return STEPS[params["step"]]

    def no_retry(call, *args):
        # a bad param or an existing folder stays so on every try: fail at once, one line
        try:
            return call(*args)
        except (InputError, OutputError) as exc:
            raise AirflowFailException(f"error: {exc}") from None

    @task
    def freeze(params: dict | None = None) -> str:
        return no_retry(scheduled.freeze_latest, params)

    @task
    def reveal(params: dict | None = None) -> str:
        return no_retry(scheduled.reveal_latest, params)

    @task.sensor(
        poke_interval=POKE_SECONDS, timeout=WAIT_SECONDS, mode="reschedule", soft_fail=True
    )
    def wait_for_submissions(params: dict | None = None) -> PokeReturnValue:
        latest = scheduled.latest_path(params["runs"], params["latest"])
        changed, state = scheduled.has_changed(params["pool"], latest)
        return PokeReturnValue(is_done=changed or not params["wait_for_change"], xcom_value=state)

    @task
    def plan(params: dict | None = None, logical_date=None, dag_run=None) -> dict:
        # a run triggered by hand may have no logical date in Airflow 3: its run_after then
        return no_retry(scheduled.plan_pool_run, params, logical_date or dag_run.run_after)

    evaluate = Disc21SparkSubmit(
        task_id="evaluate",
        application=f"{{{{ {PLAN}['application'] }}}}",
        application_args=f"{{{{ {PLAN}['args'] }}}}",
        conf=f"{{{{ {PLAN}['conf'] }}}}",
        env_vars=f"{{{{ {PLAN}['env'] }}}}",
        master=f"{{{{ {PLAN}['master'] }}}}",
        name="disc21spark-pool",
    )

    @task
    def publish(planned: dict, state: dict, params: dict | None = None, dag_run=None) -> str:
        return scheduled.publish_dag_run(
            planned["output"], params, dag_run, previous=planned["previous"], pool_state=state
        )

    state = wait_for_submissions()
    planned = plan()
    step() >> [state, freeze(), reveal()]
    state >> planned >> evaluate >> publish(planned, state)
