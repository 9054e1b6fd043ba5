"""The matching-track job: read → validate → label → sort → aggregate → report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.errors import InputError, first_line, is_read_failure
from disc21spark.core.output import check_writable, staged_output
from disc21spark.core.phases import Phases
from disc21spark.matching import labels, report, validate
from disc21spark.matching import plan as scoring
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.read import GROUND_TRUTH_COLUMNS, read_predictions, read_small_table
from disc21spark.matching.spec import DEFAULT_CURVE_POINTS


@dataclass(frozen=True)
class MatchingJob:
    ground_truth: str
    predictions: str
    output: str | None
    max_results: int = 500_000
    partitions: int | None = None
    overwrite: bool = False
    curve_points: int = DEFAULT_CURVE_POINTS
    predictions_format: str = "auto"
    ground_truth_format: str = "auto"
    title: str | None = None


def load_ground_truth(spark: SparkSession, path: str, fmt: str = "auto") -> GroundTruth:
    rows = read_small_table(spark, path, GROUND_TRUTH_COLUMNS, fmt)
    return validate.ground_truth(rows, path)


def ground_truth_phase(spark: SparkSession, path: str, fmt: str, phases: Phases) -> GroundTruth:
    """The ground truth, read first so that a bad file fails before any heavy work."""
    with phases.phase("ground truth") as note:
        gt = load_ground_truth(spark, path, fmt)
        note["rows"] = gt.n_queries
        note["detail"] = f"{gt.n_positives:,} positive pairs"
    return gt


def score_predictions(
    spark: SparkSession, job: MatchingJob, gt: GroundTruth, phases: Phases
) -> MatchingMetrics:
    raw = read_predictions(spark, job.predictions, job.predictions_format)
    typed = validate.typed_predictions(raw)
    return score_typed(
        spark, typed, gt, phases, job.predictions, job.max_results, job.partitions, job.curve_points
    )


def score_typed(
    spark: SparkSession,
    typed: DataFrame,
    gt: GroundTruth,
    phases: Phases,
    source: str,
    max_results: int,
    partitions: int | None,
    curve_points: int,
    read_detail: str = "parsed, checked, labelled and counted per query in one pass",
) -> MatchingMetrics:
    """Score typed predictions (file, query_id, reference_id, score, bad): the one path
    of both tracks from labelling to the metrics (the read phase runs the plan of
    ``typed`` too, as Spark is lazy)."""
    queries = labels.ground_truth_frame(spark, gt)
    with phases.phase("read") as note:
        labelled = labels.label(typed, queries).withColumn(labels.SUBMISSION, F.lit(0))
        # one pass parses, checks and labels; only compact numeric rows are kept
        rows = labels.compact(labelled, "bad").persist(StorageLevel.MEMORY_AND_DISK)
        try:
            census = scoring.census(rows).get(0, scoring.EMPTY_CENSUS)
        except Exception as exc:
            rows.unpersist()
            if is_read_failure(exc):  # an unreadable file fails here, at its first read
                raise InputError(source, f"cannot be read ({first_line(exc)})") from None
            raise
        note["rows"] = census.n_predictions
        note["detail"] = read_detail
    try:
        with phases.phase("validate") as note:
            if census.n_bad:
                validate.raise_problem(spark, census.first_bad)
            validate.check_max_results(source, census.n_predictions, max_results)
            if census.n_repeated_pairs:
                suspect = labels.query_key(census.repeating_query, gt)
                validate.raise_duplicate(spark, typed, suspect)
            note["rows"] = census.n_predictions
        with phases.phase("label") as note:
            stats = scoring.query_stats({0: census}, labelled)[0]
            note["rows"] = stats.n_predictions
            note["detail"] = (
                f"{len(census.ranks):,} true pairs found, "
                f"{stats.n_unknown_query_predictions:,} predictions for unknown queries"
            )
        partitions = partitions or scoring.default_partitions(
            stats.n_predictions, spark.sparkContext.defaultParallelism
        )
        metrics = scoring.score_rows(
            rows.drop("bad"),
            gt,
            partitions,
            curve_points,
            {0: stats},
            {0: census.ranks},
            phases,
        )[0]
    finally:
        rows.unpersist()
    return metrics


def run(spark: SparkSession, job: MatchingJob) -> MatchingMetrics:
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


def evaluate_cli(args) -> MatchingMetrics:
    """jobs/evaluate.py's one call: session, job, table on stdout."""
    from disc21spark.core.session import spark_session

    job = MatchingJob(
        ground_truth=args.ground_truth,
        predictions=args.predictions,
        output=args.output,
        max_results=args.max_results,
        partitions=args.partitions,
        overwrite=args.overwrite,
        curve_points=args.curve_points,
        predictions_format=args.predictions_format,
        ground_truth_format=args.ground_truth_format,
        title=args.title,
    )
    if job.output:
        check_writable(job.output, job.overwrite)  # before paying for Spark's start
    spark = spark_session(args.profile, args.master, debug=args.debug)
    metrics = run(spark, job)
    print(report.format_table(metrics, f"DISC21 matching track: {job.predictions}"))
    if job.output:
        print(f"results in {job.output}/ (metrics.json, pr_curve.csv, pr_curve.png)")
    return metrics
