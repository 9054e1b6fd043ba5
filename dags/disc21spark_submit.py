"""Shared by the disc21spark DAGs: where the checkout is, the spark-submit operator whose
master is a DAG param, and the params every DAG takes for Spark and Python.

Not a DAG itself (Airflow parses it and finds none).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Param
from airflow.sdk.exceptions import AirflowFailException

# the checkout with jobs/ and disc21spark/: $DISC21SPARK_HOME when the DAG files were
# copied into another DAG folder, else the checkout this file lives in
PROJECT = Path(os.environ.get("DISC21SPARK_HOME") or Path(__file__).resolve().parents[1])
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))  # disc21spark.scheduled needs only the standard library

from disc21spark import scheduled  # noqa: E402

# the Airflow connection that holds the master when the master param is empty
SPARK_CONN_ID = "disc21spark_spark"


class Disc21SparkSubmit(SparkSubmitOperator):
    """SparkSubmitOperator with the master as a templated field, so that it can be a DAG
    param: the provider reads the master from an Airflow connection only, so a non-empty
    ``master`` is given to this task alone as an environment-variable connection
    (``AIRFLOW_CONN_<ID>``, which workers look up before the metadata database). An empty
    ``master`` leaves the deployment's ``disc21spark_spark`` connection in charge (YARN,
    Kubernetes, a deploy mode, a queue...)."""

    template_fields = (*SparkSubmitOperator.template_fields, "master")

    def __init__(self, *, master: str = "", **kwargs: Any) -> None:
        super().__init__(conn_id=SPARK_CONN_ID, **kwargs)
        self.master = master

    def execute(self, context: Any) -> None:
        if self.master:
            os.environ[f"AIRFLOW_CONN_{SPARK_CONN_ID.upper()}"] = json.dumps(
                {"conn_type": "spark", "host": self.master}
            )
        try:
            super().execute(context)
        except Exception as exc:  # the hook's AirflowException: "... Error code is: 2."
            code = scheduled.exit_code_of(str(exc))
            if code is None:
                raise
            # the job's exit code decides: bad input (2) fails at once, without retries
            retry, why = scheduled.retry_decision(code)
            self.log.error("disc21spark: %s", why)
            if not retry:
                raise AirflowFailException(f"disc21spark: {why}") from exc
            raise


def spark_params() -> dict[str, Param]:
    """The params of Spark and of the Python environment, shared by both DAGs."""
    return {
        "master": Param(
            "local[*]",
            type="string",
            description="Spark master (local[*], spark://host:7077, yarn, k8s://...); empty: "
            f"the Airflow connection {SPARK_CONN_ID}",
        ),
        "spark_conf": Param(
            {}, type="object", description="Spark settings, passed as --conf key=value"
        ),
        "env": Param(
            {},
            type="object",
            description="extra environment of spark-submit (JAVA_HOME, SPARK_LOCAL_IP...)",
        ),
        "python_env": Param(
            "virtualenv",
            enum=["virtualenv", "archive"],
            description="virtualenv: the virtualenv param's Python everywhere; archive: the "
            "archive param shipped with spark.archives and unpacked as ./env on executors",
        ),
        "virtualenv": Param(
            str(PROJECT / ".venv"),
            type="string",
            description="a virtualenv with disc21spark installed (its spark-submit and Python)",
        ),
        "archive": Param(
            str(PROJECT / "dist" / "disc21spark-env.tar.gz"),
            type="string",
            description="packed environment for python_env=archive",
        ),
        "driver_python": Param(
            "",
            type="string",
            description="python_env=archive: the driver's Python (empty: the virtualenv's)",
        ),
        "project": Param(
            str(PROJECT), type="string", description="the disc21spark checkout (jobs/*.py)"
        ),
    }
