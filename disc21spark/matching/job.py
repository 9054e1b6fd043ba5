"""The matching-track job: read → validate → label → sort → aggregate → report.

One submission is scored on the plan its ``Choice`` names (``engine.py`` decides):
``per-file`` (``local.py``: Arrow and the numpy specification, in this process, from
the file or, on Spark, from its bytes read in one Spark task) or ``distributed`` (the plan
of ``score.py``). Their figures are the specification's; the tests hold them equal,
errors included.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disc21spark import engine, resolve
from disc21spark.core import config, damage, fs
from disc21spark.core.errors import InputError
from disc21spark.core.output import staged_output
from disc21spark.core.phases import Phases
from disc21spark.core.runner import fields_from_options
from disc21spark.matching import coverage
from disc21spark.matching.ground_truth import first_steps
from disc21spark.matching.inprocess import local
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.reports import report
from disc21spark.matching.scoring_job import ScoringJob

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class MatchingJob(ScoringJob):
    """One submission, scored strictly."""

    predictions: str
    title: str | None = config.from_defaults()
    choice: engine.Choice = engine.DISTRIBUTED  # engine and plan (engine.choose decides)

    @property
    def needs_spark(self) -> bool:
        return self.choice.needs_spark

    @classmethod
    def from_options(cls, request: Any, choice: engine.Choice = engine.DISTRIBUTED) -> MatchingJob:
        """`disc21spark evaluate` with one submission: ``request`` a checked
        ``commands.evaluate_request.EvaluateRequest`` whose predictions name one path."""
        predictions = request.predictions
        if not isinstance(predictions, str):
            (predictions,) = predictions
        return cls(**fields_from_options(cls, request, predictions=predictions, choice=choice))

    def execute(self, spark: SparkSession | None) -> MatchingMetrics:
        metrics = run(spark, self)
        # the command line says the coverage warnings; the library API returns them only
        coverage.announce(self.predictions, metrics.warnings)
        return metrics

    def summary(self, metrics: MatchingMetrics) -> list[str]:
        lines = [report.format_table(metrics, f"DISC21 matching track: {self.predictions}")]
        if metrics.groups is not None:
            lines.extend(metrics.groups.lines())
        if self.output:
            extra = ", groups.csv" if metrics.groups is not None else ""
            extra += ", queries.csv, queries.parquet" if metrics.queries is not None else ""
            lines.append(
                f"results in {self.output}/ (metrics.json, pr_curve.csv, pr_curve.png{extra})"
            )
        return lines


def _scored(
    spark: SparkSession | None, job: MatchingJob, gt: GroundTruth, phases: Phases
) -> tuple[MatchingMetrics, engine.Choice]:
    """The submission's metrics, or the InputError naming its first problem, on the
    plan ``job.choice`` names (settled by ``engine.settle``), and the choice as it ran:
    a file the per-file plan finds Arrow reads otherwise than Spark (Parquet ids that
    are not strings: its footer is read only by the task) is read by the distributed
    plan, and the reason recorded."""
    if job.choice.plan == "per-file":
        metrics = _in_process(spark, job, gt, phases)
        if metrics is not None:
            return metrics, job.choice
        why = f"{job.predictions}: Arrow reads its columns otherwise than Spark"
        return _distributed(spark, job, gt, phases), job.choice.because(why, plan="distributed")
    return _distributed(spark, job, gt, phases), job.choice


def _in_process(
    spark: SparkSession | None, job: MatchingJob, gt: GroundTruth, phases: Phases
) -> MatchingMetrics | None:
    """The per-file plan: a local file read here, any other path (the one file listed,
    resolved by the decision) in one Spark task that reads its bytes; None when only
    Spark's reader reads the file as Spark does."""
    (resolved,) = job.choice.inputs.predictions
    settings = job.settings(job.choice.batch_bytes)
    if resolved.local is not None:
        try:
            return local.score_file(resolved, gt, settings, phases)
        except local.NotForThisEngine as exc:
            if not job.choice.needs_spark:  # no session here to read it as Spark does
                reason = str(exc).rsplit(": ", 1)[-1]
                raise InputError(resolved.given, f"{reason}; use --engine spark") from None
            return None
    from disc21spark.matching.spark import per_file

    with phases.phase("score") as note:
        (outcome,) = per_file.score_files(spark, [resolved], gt, settings)
        if outcome.needs_spark:
            return None
        if outcome.error is not None:
            raise outcome.input_error()
        note["rows"] = outcome.metrics.n_predictions
        note["detail"] = "in process, one Spark task"
    return outcome.metrics


def _distributed(
    spark: SparkSession, job: MatchingJob, gt: GroundTruth, phases: Phases
) -> MatchingMetrics:
    """The distributed plan of ``score.py``. Says nothing: the warnings are returned."""
    # here, not above: the in-process engine never pays for importing PySpark
    from disc21spark.matching.spark.read import read_predictions

    (fmt,) = {p.format for p in job.choice.inputs.predictions}
    raw = read_predictions(spark, job.predictions, fmt, listed=job.choice.listed)
    bound = resolve.rows_at_most(job.choice.inputs.predictions)
    return score_frame(spark, (raw, job.predictions, fmt, bound), gt, job, phases)


def score_frame(
    spark: SparkSession,
    read: tuple,
    gt: GroundTruth,
    job: MatchingJob,
    phases: Phases,
    drawn: Any = None,
):
    """One submission's raw predictions checked and scored on Spark. ``read``: (the
    DataFrame of ``read.read_predictions`` or ``read.typed_table`` of a caller's
    DataFrame, the name messages give it, the format it was read in: csv or parquet, as
    resolved, the most rows it can hold: ``resolve.rows_at_most``, None when not known);
    ``drawn``: the resample weights of ``gt``, drawn once for a pool of tables
    (``stats.weighted.Drawn``; None: drawn by the bootstrap). What the scorer caches is
    released before it returns."""
    raw, source, fmt, rows_at_most = read

    from disc21spark.matching.spark import labels, validate
    from disc21spark.matching.spark.score import Scoring, UnreadableInput, score

    pairs = validate.typed_predictions(raw).selectExpr("*", f"0 AS {labels.SUBMISSION}")
    scoring = Scoring(
        gt,
        job.curve_points,
        job.sort_partitions,
        job.max_results,
        sources={0: source},
        resampling=job.resampling,
        per_query=job.per_query,
        drawn=drawn,
        rows_at_most=rows_at_most,
    )
    try:
        scored = score(spark, pairs, [0], scoring, phases)
    except UnreadableInput as exc:  # an unreadable file fails at its first read
        reason = damage.unreadable(source, exc.cause, fmt, spark)
        raise InputError(source, reason) from None
    if 0 in scored.errors:
        raise scored.errors[0]
    return coverage.check_spark(spark, pairs, gt, scored.metrics, {0: source}, False)[0]


@dataclass(frozen=True)
class OneRun:
    """One submission's run up to its report: the job with its settled choice and query
    groups, the ground truth, the run's files (``core.fs.files_of``), the metrics and
    the choice as it ran (``engine.Choice``: a per-file run that fell to the
    distributed plan says so)."""

    job: MatchingJob
    gt: GroundTruth
    files: fs.LocalFiles
    metrics: MatchingMetrics
    ran: engine.Choice


def score_one(
    spark: SparkSession | None,
    job: MatchingJob,
    phases: Phases,
    gt: GroundTruth | None = None,
    groups: Any = None,
) -> OneRun:
    """One run of one submission file, the command's and the API's: the first steps
    (``first_steps``: the choice settled, the ground truth and the query groups read;
    ``gt``, ``groups``: the API's, read at its entry), then the counts on the plan the
    choice names. Raises InputError, OutputError."""
    job, gt, files = first_steps(spark, job, phases, gt, groups)
    metrics, ran = _scored(spark, job, gt, phases)
    return OneRun(job, gt, files, metrics, ran)


def run(spark: SparkSession | None, job: MatchingJob) -> MatchingMetrics:
    """Score one submission (``score_one``); writes job.output (when given) whole or
    not at all."""
    phases = Phases()
    one = score_one(spark, job, phases)
    job, ran, files = one.job, one.ran, one.files
    if job.output:
        with phases.phase("report"), staged_output(job.output, job.overwrite) as stage:
            run_info = report.run_document(
                files,
                ground_truth=job.ground_truth,
                predictions=job.predictions,
                max_results=job.max_results,
                **job.resampling.settings(),
                query_groups=job.query_groups,
                plan=ran.plan,
                plan_reasons=list(ran.reasons),
                resolved=ran.record(),
            )
            title = job.title or f"DISC21 matching track: {Path(job.predictions).name}"
            report.write_matching_report(stage, one.metrics, run_info, title)
    return one.metrics
