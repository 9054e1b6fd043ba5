"""A pool run's boards written: the published one in ``--output`` (frozen with
``--freeze``; ``changes.csv`` with ``--compare-to``) and, with a split, the private one in
``--private-output``, first, so that a failure publishes nothing."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from disc21spark.core import fs, record
from disc21spark.core.board_files import UNSPLIT, kind
from disc21spark.core.phases import Phases
from disc21spark.matching.reports import report
from disc21spark.pool import boards, changes, kinds
from disc21spark.pool import queries as pool_queries
from disc21spark.pool import report as pool_report
from disc21spark.pool.split import PRIVATE, PUBLIC

BOARDS_PLAN = (
    "each board: the valid submissions read again on the distributed plan, their rows "
    "filtered to the board's queries by a broadcast semi-join"
)
# the same for a pool scored in worker processes (pool/in_process.py)
BOARDS_IN_PROCESS = (
    "each board: the valid submissions read again in the worker processes, their rows "
    "cut to the board's queries"
)


def boards_plan(choice: Any) -> str:
    """How the boards of a split are scored on the engine of ``choice``."""
    return BOARDS_PLAN if choice.needs_spark else BOARDS_IN_PROCESS


def write(spark: SparkSession, job: Any, result: Any, phases: Phases, before: dict | None) -> None:
    """The published board in ``job.output`` (frozen with ``job.freeze``) and, with a
    split, the private board in ``job.private_output``: the private one first, so that a
    failure publishes nothing. ``before``: the board compared to; changes.csv goes beside
    the board of its kind (a private board's beside the private one, never published)."""
    inputs = {
        "ground_truth": job.ground_truth,
        "predictions": job.predictions,
        "submission_column": job.submission_column,
        "query_groups": job.query_groups,
        "plan": job.choice.plan,
        "plan_reasons": list(job.choice.reasons),
        "resolved": job.choice.record(),
        **result.settings,
        "board": UNSPLIT if result.private is None else PUBLIC,
    }
    files = fs.files_of(job.choice.engine, spark)  # the engine the decision named
    private_before = before if before is not None and kind(before["run"]) == PRIVATE else None
    if result.private is not None:  # validity on the plan chosen, the boards on this one
        inputs["plan_reasons"].append(boards_plan(job.choice))
        inputs["private_board"] = job.private_output
    if result.private is not None and job.private_output:
        _write_private(files, job, result, phases, inputs, private_before)
    if not job.output:
        return
    inputs["frozen"] = job.freeze
    before = None if private_before is not None else before
    if before is not None:
        inputs.update(changes.compared(before, job.compare_to))
    with report.staged_report(files, phases, job.output, job.overwrite, inputs) as written:
        stage, run_info = written
        pool_report.write(stage, result.submissions, run_info)
        if before is not None:
            changes.write_changes(stage, changes.changes(before, result.submissions))
        if job.queries_needed is not None:
            pool_report.write_queries_needed(stage, result.submissions, job.queries_needed)
        if job.per_query:
            pool_queries.write(stage, result.submissions)
        if job.freeze:
            changes.freeze(stage, inputs, len(result.submissions))


def _write_private(
    files: fs.LocalFiles,
    job: Any,
    result: Any,
    phases: Phases,
    inputs: dict,
    before: dict | None,
) -> None:
    """The private board in ``job.private_output``: its run block names the split file,
    its SHA-256 and the key of the published board's keyed digest (``pool/kinds.py``)."""
    shown = {
        **inputs,
        "board": PRIVATE,
        "private_queries": job.private_queries,
        kinds.PLAIN: result.split.digest,
        kinds.KEY: result.key.hex(),
    }
    shown.pop("private_board")
    if before is not None:
        shown.update(changes.compared(before, job.compare_to))
    out = job.private_output
    record.current().keep_private(out)  # its run.json gives the split's digest
    with report.staged_report(files, phases, out, job.overwrite, shown) as (stage, run_info):
        boards.write_private(stage, result.submissions, result.private, run_info)
        if before is not None:
            changes.write_changes(stage, changes.changes(before, result.private))
        if job.per_query:
            pool_queries.write(stage, result.private)
