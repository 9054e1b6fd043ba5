"""disc21spark evaluate: its options (evaluate_options.py) parsed into an EvaluateRequest
and checked (evaluate_request.py), and the job engine.settle's decision names (one
submission, a pool, or the descriptor track)."""

from __future__ import annotations

import logging
from typing import Any

from disc21spark import engine

# NAME and add_arguments: this command's, as in every command module (commands/__init__.py)
from disc21spark.commands.evaluate_options import NAME as NAME
from disc21spark.commands.evaluate_options import add_arguments as add_arguments
from disc21spark.commands.evaluate_request import EvaluateRequest
from disc21spark.core.errors import InputError

SUMMARY = "score a submission, a pool of submissions, or descriptors"
DESCRIPTION = """\
Score a DISC21 submission: matching track (pairs) or descriptor track (vectors).
One local file is scored in this process, with no JVM; a pool of local files too, one
worker process a core. The descriptor track, a one-table pool, --master, --engine spark,
or an input or output URI (hdfs://..., file://...) run on Spark.

disc21spark evaluate --ground-truth gt.csv --predictions preds.csv --output out/
disc21spark evaluate --ground-truth gt.csv \\
    --query-descriptors queries.h5 --reference-descriptors 'refs_*.h5' --output out/
scripts/spark-submit jobs/evaluate.py ...    (the same from a checkout, with a cluster's Spark)
"""
log = logging.getLogger("disc21spark")


REQUEST = EvaluateRequest


class Evaluation:
    """The evaluate command's job: the engine is chosen before anything starts
    (``engine.choose``), then settled once the session can list the inputs
    (``engine.settle``), then the job that scores the input."""

    # the options naming inputs the run record hashes (runner.BaseJob.INPUTS), in its order
    INPUTS = (
        "ground_truth",
        "predictions",
        "query_descriptors",
        "reference_descriptors",
        "train_descriptors",
        "previous",
        "compare_to",
        "query_groups",
        "private_queries",
    )
    PRIVATE_INPUTS = ("private_queries",)

    def __init__(self, request: EvaluateRequest) -> None:
        self.request = request
        self.overwrite = request.overwrite
        self.choice = engine.DISTRIBUTED
        self.chosen: Any = None

    def check(self) -> None:
        """The engine: decided here, so that the runner starts Spark only if it is used."""
        self.choice = choice_of(self.request)

    @property
    def needs_spark(self) -> bool:
        return self.choice.needs_spark

    def output_folder(self) -> str | None:
        return None if self.request.explain else self.request.output

    def private_folder(self) -> str | None:
        return None if self.request.explain else self.request.private_output

    def settings(self) -> dict[str, Any]:
        """What the run record keeps of the command line: the options of this run's
        track (a matching run does not record the descriptor track's, nor a descriptor
        run the pools')."""
        return self.request.track_options()

    def execute(self, spark: Any) -> Any:
        self.choice = settled(spark, self.request, self.choice)
        if self.request.explain:
            if self.choice.kind == "pool":  # a bad board file: the run's one line
                check_board_files(spark, self.request, self.choice)
            return self.choice
        self.chosen = pick(self.request, self.choice)
        return self.chosen.execute(spark)

    def summary(self, result: Any) -> list[str]:
        if self.request.explain:
            if result.kind == "pool" and self.request.private_queries:
                from disc21spark.pool.publish import boards_plan

                return [*result.lines(), f"boards: {boards_plan(result)}"]
            return result.lines()
        return self.chosen.summary(result)


def check_board_files(spark: Any, r: EvaluateRequest, choice: engine.Choice) -> None:
    """--explain of a pool: the groups and private-queries files checked against the
    ground truth (as ``choice`` resolved it, on its engine) as a run checks them;
    InputError with the run's line."""
    if not (r.query_groups or r.private_queries):
        return
    from disc21spark.core import fs
    from disc21spark.core.phases import Phases
    from disc21spark.matching.ground_truth import ground_truth_phase, groups_phase
    from disc21spark.pool.split import read_split

    files = fs.files_of(choice.engine, spark)
    gt = ground_truth_phase(files, choice.inputs.ground_truth, Phases())
    groups_phase(files.spark, r.query_groups, gt, Phases())
    if r.private_queries:
        read_split(r.private_queries, gt, files.spark)


def choice_of(r: EvaluateRequest) -> engine.Choice:
    """``engine.choose`` for this request (see --engine, --pool-plan, --local-max-bytes);
    InputError when local is asked for and cannot be used."""
    return engine.choose(
        r.predictions or [],
        r.ground_truth,
        track=r.track,
        engine=r.engine,
        plan=r.pool_plan,
        local_max_bytes=r.local_max_bytes,
        master=r.master,
        output=r.output,
        submission_column=r.submission_column,
        predictions_format=r.predictions_format,
        side=(r.query_groups, r.private_queries, r.private_output, r.previous, r.compare_to),
    )


def settled(spark: Any, r: EvaluateRequest, choice: engine.Choice) -> engine.Choice:
    """``engine.settle`` for this request, once the session (if any) is up."""
    return engine.settle(
        spark,
        choice,
        r.predictions or [],
        track=r.track,
        submission_column=r.submission_column,
        fmt=r.predictions_format,
        given=r,
    )


def pick(r: EvaluateRequest, choice: engine.Choice) -> Any:
    """The job for ``choice``, settled (``engine.settle``): the descriptor track, a pool,
    or one submission scored strictly."""
    from disc21spark.matching.job import MatchingJob

    if choice.kind == "descriptor track":
        from disc21spark.descriptors.job import DescriptorJob

        return DescriptorJob.from_options(r, choice.inputs)
    if choice.kind == "pool":
        from disc21spark.pool.job import PoolJob

        return PoolJob.from_options(r, choice)
    pool_only = ("private_queries", "freeze", "compare_to", "queries_needed")
    asked = ["--" + n.replace("_", "-") for n in pool_only if getattr(r, n) not in (None, False)]
    if asked:
        raise InputError(
            "",
            f"{asked[0]} is for a pool's boards: give several files, a glob, a folder "
            "or --submission-column",
        )
    if r.previous or r.fail_on_invalid:
        log.info("one submission: --previous and --fail-on-invalid do not apply")
    return MatchingJob.from_options(r, choice)


def job_of(request: EvaluateRequest) -> Evaluation:
    """The job of a checked request: the one that picks the track's job once the
    engine is settled."""
    return Evaluation(request)
