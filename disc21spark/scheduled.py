"""What a scheduler needs around the jobs: run folders, the last good run, publishing.

The Airflow DAGs in ``dags/`` are thin: they call these functions from their tasks and
hand ``spark-submit`` what ``submit_settings`` computes. Nothing here imports Airflow,
PySpark or numpy (the scheduler's environment need not have them), and every function is
tested without a scheduler.

Layout of a scheduled pool (``runs`` is a DAG param):

    runs/2026-11-30T000000Z/   one folder per run, named by the run's logical date (UTC):
                               evaluate's --output, plus scheduled_run.json
    runs/latest -> 2026-...    the last successful run: a symlink swapped atomically after
                               the run succeeded, never before; it is also the next
                               run's --previous
    private_runs/2026-...Z/    with ``private_queries``, each run's private board
                               (--private-output), in a folder apart from ``runs``

An organiser's steps, triggered by hand (the pool DAG's ``step`` param): ``freeze``
copies the latest public board to the new folder ``frozen``, ``reveal`` copies the
latest run's private board to the new folder ``revealed``; both copies are frozen
(``core/frozen.py``): no run replaces them.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from disc21spark.core import frozen
from disc21spark.core.errors import InputError

log = logging.getLogger("disc21spark")

RECORD = "scheduled_run.json"
PYTHON_ENVS = ("virtualenv", "archive")


def run_tag(when: datetime) -> str:
    """A logical date as a folder name: UTC, no colon (Hadoop paths refuse colons)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")


def pool_state(pool: str) -> dict[str, list[int]]:
    """Name → [size, mtime in ns] of each submission file of a pool folder: a cheap
    fingerprint that changes when a file is added, removed, replaced or rewritten (the
    job itself decides what to rescore, by content checksum)."""
    folder = Path(pool)
    if not folder.is_dir():
        raise InputError(pool, "the pool is not a folder")
    state = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        # Spark's listing skips hidden files (.x, _x), and so does a run's fingerprint
        if path.is_file() and not any(p.startswith((".", "_")) for p in relative.parts):
            info = path.stat()
            state[relative.as_posix()] = [info.st_size, info.st_mtime_ns]
    return state


def latest_path(runs: str, latest: str = "") -> Path:
    return Path(latest) if latest else Path(runs) / "latest"


def last_run(latest: Path) -> Path | None:
    """The folder of the last successful run (what ``latest`` points to), if any."""
    if not latest.exists():
        return None
    folder = latest.resolve()
    return folder if (folder / RECORD).is_file() else None


def published_state(latest: Path) -> dict | None:
    """The pool fingerprint the last successful run scored, if any."""
    folder = last_run(latest)
    if folder is None:
        return None
    return json.loads((folder / RECORD).read_text()).get("pool_state")


def has_changed(pool: str, latest: Path) -> tuple[bool, dict[str, list[int]]]:
    """(whether the pool differs from what the last good run scored, its state now)."""
    now = pool_state(pool)
    return now != published_state(latest), now


def plan_pool_run(params: Mapping, logical_date: datetime) -> dict:
    """What the evaluate task runs: its output folder (by logical date), the last good run
    as --previous (never the output itself: a rerun of the same date reuses the run
    before), the application, its arguments and the spark-submit settings."""
    for key in ("pool", "ground_truth", "runs"):
        _required(params, key)
    project = Path(params["project"])
    output = Path(params["runs"]) / run_tag(logical_date)
    output.parent.mkdir(parents=True, exist_ok=True)  # the job writes into an existing folder
    previous = last_run(latest_path(params["runs"], params.get("latest", "")))
    if previous is not None and previous == output.resolve():
        previous = _run_before(previous)
    args = [
        "--ground-truth",
        params["ground_truth"],
        "--predictions",
        params["pool"],
        "--output",
        str(output),
        "--overwrite",
    ]
    if previous is not None:
        args += ["--previous", str(previous)]
    private = _private_output(params, output.name)
    if private is not None:
        args += ["--private-queries", params["private_queries"], "--private-output", private]
    args += [str(a) for a in params.get("evaluate_args") or []]
    return {
        "application": str(project / "jobs" / "evaluate.py"),
        "args": args,
        "output": str(output),
        "private_output": private,
        "previous": str(previous) if previous else None,
        **submit_settings(params),
    }


def _private_output(params: Mapping, tag: str) -> str | None:
    """With ``private_queries``, the run's private board: ``<private_runs>/<tag>``, never
    inside ``runs`` (whatever publishes the runs would publish it) nor around it."""
    if not params.get("private_queries"):
        return None
    if not params.get("private_runs"):
        raise InputError("param private_runs", "is required with private_queries")
    runs, private = Path(params["runs"]).absolute(), Path(params["private_runs"]).absolute()
    if private == runs or runs in private.parents or private in runs.parents:
        reason = f"must be apart from runs ({runs}): the private boards are not published"
        raise InputError("param private_runs", reason)
    private.mkdir(parents=True, exist_ok=True)
    return str(private / tag)


def freeze_latest(params: Mapping) -> str:
    """The ``freeze`` step: the latest public board copied, frozen, to ``frozen``."""
    to = _required(params, "frozen")
    return str(frozen.freeze_board(_latest_run(params), to))


def reveal_latest(params: Mapping) -> str:
    """The ``reveal`` step: the latest run's private board copied, frozen, to
    ``revealed`` (what the organiser publishes at the end)."""
    to, private_runs = _required(params, "revealed"), _required(params, "private_runs")
    run = _latest_run(params)
    private = Path(private_runs) / run.name
    if not private.is_dir():
        raise InputError(str(private), f"the latest run ({run.name}) wrote no private board")
    return str(frozen.freeze_board(private, to))


def _latest_run(params: Mapping) -> Path:
    latest = latest_path(_required(params, "runs"), params.get("latest", ""))
    run = last_run(latest)
    if run is None:
        raise InputError(str(latest), "no successful run yet: nothing to freeze or reveal")
    return run


def _required(params: Mapping, key: str) -> str:
    if not params.get(key):
        raise InputError(f"param {key}", "is required")
    return params[key]


def _run_before(run: Path) -> Path | None:
    """The latest other successful run beside ``run`` (by name: names sort by date)."""
    others = sorted(
        p
        for p in run.parent.iterdir()
        if p != run and not p.is_symlink() and (p / RECORD).is_file()
    )
    earlier = [p for p in others if p.name < run.name]
    return earlier[-1] if earlier else None


def plan_bench_run(params: Mapping, logical_date: datetime) -> dict:
    """The three jobs of a Howe benchmark (library → bench → rank report) in one run folder."""
    _required(params, "runs")
    project = Path(params["project"])
    folder = Path(params["runs"]) / run_tag(logical_date)
    folder.mkdir(parents=True, exist_ok=True)  # the jobs write into an existing folder
    library, bench, report = folder / "library", folder / "bench", folder / "report"
    jobs = {
        "make_library": [
            "--output",
            str(library),
            "--size",
            str(params["library_size"]),
            "--seed",
            str(params["seed"]),
            "--overwrite",
        ],
        "make_queries": [
            "--images",
            str(library),
            "--output",
            str(bench),
            "--tests",
            params["tests"],
            "--queries-per-test",
            str(params["queries_per_test"]),
            "--distractors",
            str(params["distractors"]),
            "--seed",
            str(params["seed"]),
            "--overwrite",
        ],
        "rank_eval": [
            "--bench",
            str(bench),
            "--methods",
            _methods(params),
            "--output",
            str(report),
            "--overwrite",
            *[str(a) for a in params.get("rank_eval_args") or []],
        ],
    }
    return {
        "output": str(folder),
        "applications": {name: str(project / "jobs" / f"{name}.py") for name in jobs},
        "args": jobs,
        **submit_settings(params),
    }


def submit_settings(params: Mapping) -> dict:
    """spark-submit's master, --conf settings and environment for the chosen Python:

    * ``virtualenv``: the driver and the executors run that virtualenv's Python (one
      machine, or a cluster whose nodes share the path); its ``spark-submit`` is used;
    * ``archive``: the packed environment (``dist/disc21spark-env.tar.gz``) travels with
      the job (``spark.archives``) and executors unpack it as ``./env``; the driver runs
      ``driver_python`` (client mode: a local interpreter with the package).
    """
    project = Path(params["project"])
    venv = Path(params.get("virtualenv") or project / ".venv")
    python_env = params.get("python_env") or "virtualenv"
    if python_env not in PYTHON_ENVS:
        raise InputError("param python_env", f"{python_env!r} is not one of {PYTHON_ENVS}")
    # pip's PySpark finds its home through the python3 on PATH (README, spark-submit lines)
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPARK_CONF_DIR": str(project / "disc21spark" / "conf"),
        # the checkout's package, not whichever one the virtualenv has installed, for the
        # driver and for local Python workers (Spark passes PYTHONPATH on to them; their
        # working folder, which a shell run from the checkout would put first, is the
        # scheduler's here)
        "PYTHONPATH": str(project),
    }
    conf: dict[str, str] = {}
    if python_env == "virtualenv":
        python = str(venv / "bin" / "python")
        env |= {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
        conf["spark.pyspark.python"] = python
    else:
        archive = params.get("archive") or str(project / "dist" / "disc21spark-env.tar.gz")
        driver = params.get("driver_python") or str(venv / "bin" / "python")
        env |= {"PYSPARK_PYTHON": "./env/bin/python", "PYSPARK_DRIVER_PYTHON": driver}
        conf |= {
            "spark.archives": f"{archive}#env",
            "spark.pyspark.python": "./env/bin/python",
            "spark.pyspark.driver.python": driver,
        }
    conf |= {str(k): str(v) for k, v in (params.get("spark_conf") or {}).items()}
    env |= {str(k): str(v) for k, v in (params.get("env") or {}).items()}
    return {"master": params.get("master") or "", "conf": conf, "env": env}


def publish_dag_run(output: str, params: Mapping, dag_run: Any, **extra: Any) -> str:
    """What a DAG's publish task does: the run's record (which DAG run, when, and
    ``extra``) written into ``output``, then ``output`` made the latest run."""
    latest = latest_path(params["runs"], params["latest"])
    record = {
        "dag_id": dag_run.dag_id,
        "run_id": dag_run.run_id,
        "logical_date": dag_run.logical_date or dag_run.run_after,
        "published_at": datetime.now(timezone.utc),
        **extra,
    }
    publish(output, latest, record)
    return str(latest)


def publish(output: str, latest: Path, record: dict) -> Path:
    """Make ``output`` the latest run: its record written, then ``latest`` swapped in one
    rename (a reader sees the old run or the new one, never a mix or nothing)."""
    folder = Path(output)
    if not folder.is_dir():
        raise InputError(output, "the run wrote no output folder")
    (folder / RECORD).write_text(json.dumps(record, indent=2, default=str) + "\n")
    if latest.exists() and not latest.is_symlink():
        raise InputError(str(latest), "exists and is not a symlink (refusing to replace it)")
    latest.parent.mkdir(parents=True, exist_ok=True)
    staging = latest.with_name(f".{latest.name}.{os.getpid()}")
    staging.unlink(missing_ok=True)
    # relative when the run sits beside the link: the runs folder can then be moved whole
    target = folder.name if folder.parent.resolve() == latest.parent.resolve() else folder
    staging.symlink_to(target)
    os.replace(staging, latest)
    return latest


# what a scheduler does with a job's exit code (core/runner.py): 2 is the input's or the
# output's fault, the same on every try; the others may pass on another try (143: the
# task was stopped, a machine or an executor lost; 1: a failure of ours, possibly one
# of those seen from the driver)
NO_RETRY = {2: "bad input or output (exit 2): retrying cannot help; fix what the error line names"}
RETRY = {
    143: "terminated (exit 143: a timeout, a lost machine or executor): will retry",
    130: "interrupted (exit 130): will retry",
    1: "failed (exit 1: an internal error, an executor lost under it, or a package missing "
    "from the Python that ran it): will retry",
}
_CODE = re.compile(r"Error code is: (-?\d+)")


def exit_code_of(message: str) -> int | None:
    """spark-submit's exit code in the SparkSubmitHook's error ("... Error code is: 2.")."""
    found = _CODE.search(message)
    return int(found.group(1)) if found else None


def retry_decision(code: int | None) -> tuple[bool, str]:
    """(whether another try can help, the sentence for the task log) for an exit code."""
    if code in NO_RETRY:
        return False, NO_RETRY[code]
    if code in RETRY:
        return True, RETRY[code]
    return True, f"failed (exit {code}): will retry"


def retry_settings() -> dict[str, Any]:
    """The DAGs' retries: ``DISC21SPARK_RETRIES`` tries more (default 2), each
    ``DISC21SPARK_RETRY_SECONDS`` after the last (default 300)."""

    return {
        "retries": int(os.environ.get("DISC21SPARK_RETRIES", 2)),
        "retry_delay": timedelta(seconds=float(os.environ.get("DISC21SPARK_RETRY_SECONDS", 300))),
    }


def _methods(params: dict) -> str:
    """rank-eval's methods: the ``methods`` param, or its 0.1.0 name ``descriptors`` (a
    trigger's conf written for 0.1.0), with a warning in the task's log. The old name
    wins when it is there: Airflow merges a trigger's conf over the DAG's defaults, so
    ``methods`` is always there and cannot tell what the trigger gave."""
    if "descriptors" in params:
        log.warning("the param 'descriptors' is deprecated, use 'methods'")
        return params["descriptors"]
    return params["methods"]
