"""The descriptor track's files: metrics.json (with the search settings in ``run`` and
the ``budgets`` block), pr_curve.csv/png, budgets.csv/png and predictions.csv."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from disc21spark.descriptors.outcome import Scores, SearchOutcome
from disc21spark.matching.reports import report


def write_predictions(pairs: DataFrame, target: Path) -> None:
    """The pairs as a matching-track CSV, sorted by query then score, with every digit of
    the scores (they read back to the same floats). Streamed to the driver one partition
    at a time: the file is local, like every output, wherever the executors are."""
    ordered = pairs.orderBy("query_id", F.desc("score"), "reference_id")
    with open(target, "w", newline="") as out:
        out.write("query_id,reference_id,score\n")
        for row in ordered.toLocalIterator(prefetchPartitions=True):
            out.write(f"{row.query_id},{row.reference_id},{row.score!r}\n")


def run_inputs(job: Any, outcome: SearchOutcome) -> dict:
    """The settings of ``job`` (a DescriptorJob) that metrics.json records, and what the
    search found."""
    norm = bool(job.score_norm_descriptors)
    return {
        "ground_truth": job.ground_truth,
        "query_descriptors": job.query_descriptors,
        "reference_descriptors": job.reference_descriptors,
        "search": f"knn {job.knn}" if job.knn is not None else "max_results",
        "max_results": job.max_results if job.knn is None else None,
        "budgets": job.budgets or None,
        "knn_budgets": job.knn_budgets or None,
        "searched_budget": job.budget_request.search,
        "metric": job.distance,
        "index": job.index,
        "nprobe": job.nprobe,
        "score_norm": job.score_norm_descriptors or None,
        "score_norm_weight": job.score_norm_weight if norm else None,
        "score_norm_neighbors": list(job.score_norm_neighbors) if norm else None,
        "n_queries_searched": outcome.n_queries,
        "n_references": outcome.n_references,
        "dimensions": outcome.dim,
        "reference_shards": outcome.shards,
        "index_transport": outcome.transport,
        "broadcast_bytes": outcome.broadcast_bytes,
    }


def write(job: Any, scores: Scores, outcome: SearchOutcome, stage: Path, run_info: dict) -> None:
    """The report folder's files of ``job`` (a DescriptorJob), in the staging folder
    ``stage``."""
    title = job.title or "DISC21 descriptor track"
    table = scores.budgets
    blocks = {"budgets": table.to_dict()} if table is not None else {}
    report.write_matching_report(stage, scores.metrics, run_info, title, blocks=blocks)
    if table is not None:
        table.write_csv(stage / "budgets.csv")
        table.write_plot(stage / "budgets.png", title)
    if job.write_predictions:
        write_predictions(outcome.pairs, stage / "predictions.csv")
