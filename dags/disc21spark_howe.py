"""disc21spark_howe_bench: rebuild a Howe benchmark and its rank report.

plan → make_library → make_queries → rank_eval → publish, each job through the Apache
Spark provider's SparkSubmitOperator, all three in one folder per run
(``<runs>/<logical date>/library``, ``bench``, ``report``); ``<runs>/latest`` is swapped
to it after the report is written. Manual by default (``DISC21SPARK_BENCH_SCHEDULE``).
"""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from airflow.sdk import DAG, Param, task

# the helper beside this file: not every way of parsing DAGs puts their folder on sys.path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from disc21spark_submit import Disc21SparkSubmit, spark_params  # noqa: E402

from disc21spark import scheduled  # noqa: E402  (on sys.path thanks to disc21spark_submit)

PLAN = "ti.xcom_pull(task_ids='plan')"

with DAG(
    dag_id="disc21spark_howe_bench",
    description="Howe benchmark: library → altered queries → rank report",
    schedule=os.environ.get("DISC21SPARK_BENCH_SCHEDULE") or None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    # retried on 143 and other failures, never on bad input (Disc21SparkSubmit)
    default_args=scheduled.retry_settings(),
    render_template_as_native_obj=True,
    doc_md=__doc__,
    tags=["disc21spark"],
    params={
        "runs": Param("", type="string", description="folder of the run folders"),
        "latest": Param(
            "", type="string", description="the published symlink (empty: <runs>/latest)"
        ),
        "library_size": Param(300, type="integer", minimum=1, description="make_library --size"),
        "seed": Param(1, type="integer", description="--seed of make_library and make_queries"),
        "tests": Param(
            "crop:50,jumble:4x4,lowcon:80,crop:50+lowcon:80",
            type="string",
            description="make_queries --tests",
        ),
        "queries_per_test": Param(
            100, type="integer", minimum=1, description="make_queries --queries-per-test"
        ),
        "distractors": Param(
            0.2, type="number", minimum=0, maximum=1, description="make_queries --distractors"
        ),
        "methods": Param(
            "colorhist,correlogram,tiny,pdq", type="string", description="rank_eval --methods"
        ),
        "rank_eval_args": Param(
            ["--subsets", "2", "--sizes", "100,200,280"],
            type="array",
            description="more options of jobs/rank_eval.py",
        ),
        **spark_params(),
    },
):

    @task
    def plan(params: dict | None = None, logical_date=None, dag_run=None) -> dict:
        return scheduled.plan_bench_run(params, logical_date or dag_run.run_after)

    jobs = [
        Disc21SparkSubmit(
            task_id=name,
            application=f"{{{{ {PLAN}['applications']['{name}'] }}}}",
            application_args=f"{{{{ {PLAN}['args']['{name}'] }}}}",
            conf=f"{{{{ {PLAN}['conf'] }}}}",
            env_vars=f"{{{{ {PLAN}['env'] }}}}",
            master=f"{{{{ {PLAN}['master'] }}}}",
            name=f"disc21spark-{name}",
        )
        for name in ("make_library", "make_queries", "rank_eval")
    ]

    @task
    def publish(planned: dict, params: dict | None = None, dag_run=None) -> str:
        return scheduled.publish_dag_run(
            planned["output"], params, dag_run, report=f"{planned['output']}/report/report.md"
        )

    planned = plan()
    planned >> jobs[0] >> jobs[1] >> jobs[2] >> publish(planned)
