"""The matching-track job: read → validate → label → sort → aggregate → report.

Two engines score one submission: Spark (the plan of ``score.py``) and, for the everyday
local file, this process (``local.py``: Arrow and the numpy specification). Their figures
are the specification's; the tests hold them equal, errors included.
"""

from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from disc21spark.core import config
from disc21spark.core.errors import InputError, first_line
from disc21spark.core.output import check_writable, staged_output
from disc21spark.core.phases import Phases
from disc21spark.core.runner import BaseJob, job_fields
from disc21spark.matching import coverage, report
from disc21spark.matching.ground_truth import ground_truth_phase
from disc21spark.matching.model import GroundTruth, MatchingMetrics

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class MatchingJob(BaseJob):
    """One submission, scored strictly; defaults from conf/defaults.ini [evaluate]."""

    ground_truth: str
    predictions: str
    output: str | None
    max_results: int = config.value("evaluate", "max_results", int)
    partitions: int | None = config.value("evaluate", "partitions", int)
    overwrite: bool = False
    curve_points: int = config.value("evaluate", "curve_points", int)
    predictions_format: str = config.value("evaluate", "predictions_format")
    ground_truth_format: str = config.value("evaluate", "ground_truth_format")
    title: str | None = config.value("evaluate", "title")
    in_process: bool = False  # the local engine (evaluate --engine decides)

    @property
    def needs_spark(self) -> bool:
        return not self.in_process

    @classmethod
    def from_args(cls, args: Namespace) -> MatchingJob:
        """`disc21spark evaluate` with one submission (its --predictions names one path)."""
        predictions = args.predictions
        if not isinstance(predictions, str):
            (predictions,) = predictions
        in_process = getattr(args, "engine", "spark") == "local"
        return cls(**job_fields(cls, args, predictions=predictions, in_process=in_process))

    def execute(self, spark: SparkSession | None) -> MatchingMetrics:
        metrics = run(spark, self)
        # the command line says the coverage warnings; the library API returns them only
        coverage.announce(self.predictions, metrics.warnings)
        return metrics

    def summary(self, metrics: MatchingMetrics) -> list[str]:
        lines = [report.format_table(metrics, f"DISC21 matching track: {self.predictions}")]
        if self.output:
            lines.append(f"results in {self.output}/ (metrics.json, pr_curve.csv, pr_curve.png)")
        return lines


def score_predictions(
    spark: SparkSession | None, job: MatchingJob, gt: GroundTruth, phases: Phases
) -> MatchingMetrics:
    """The submission's metrics, or the InputError naming its first problem: in this
    process without a session, else on Spark. Says nothing: the warnings are returned."""
    if spark is None:
        from disc21spark.matching import local

        return local.score_file(
            job.predictions, job.predictions_format, gt, job.max_results, job.curve_points,
            phases, announce=False,
        )  # fmt: skip
    # here, not above: the in-process engine never pays for importing PySpark
    from disc21spark.matching.read import read_predictions

    raw = read_predictions(spark, job.predictions, job.predictions_format)
    return score_frame(spark, raw, job.predictions, gt, job, phases)


def score_frame(
    spark: SparkSession, raw, source: str, gt: GroundTruth, job: MatchingJob, phases: Phases
):
    """One submission's raw predictions (``read.read_predictions`` or ``read.typed_table``
    of a caller's DataFrame) checked and scored on Spark; ``source`` names it in messages.
    What the scorer caches is released before it returns."""
    from pyspark.sql import functions as F

    from disc21spark.matching import labels, validate
    from disc21spark.matching.score import Scoring, UnreadableInput, score

    pairs = validate.typed_predictions(raw).withColumn(labels.SUBMISSION, F.lit(0))
    scoring = Scoring(
        gt, job.curve_points, job.partitions, job.max_results, sources={0: source}
    )
    try:
        scored = score(spark, pairs, [0], scoring, phases)
    except UnreadableInput as exc:  # an unreadable file fails at its first read
        raise InputError(source, f"cannot be read ({first_line(exc.cause)})") from None
    if 0 in scored.errors:
        raise scored.errors[0]
    return coverage.check_spark(spark, pairs, gt, scored.metrics, {0: source}, False)[0]


def run(spark: SparkSession | None, job: MatchingJob) -> MatchingMetrics:
    """Score one submission; writes job.output (when given) whole or not at all."""
    if job.output:
        check_writable(job.output, job.overwrite)
    phases = Phases()
    gt = ground_truth_phase(spark, job.ground_truth, job.ground_truth_format, phases)
    metrics = score_predictions(spark, job, gt, phases)
    if job.output:
        with phases.phase("report"), staged_output(job.output, job.overwrite) as stage:
            run_info = report.run_document(
                spark,
                phases,
                ground_truth=job.ground_truth,
                predictions=job.predictions,
                max_results=job.max_results,
            )
            title = job.title or f"DISC21 matching track: {Path(job.predictions).name}"
            report.write_matching_report(stage, metrics, run_info, title)
    return metrics
