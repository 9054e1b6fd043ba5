"""disc21spark evaluate: the options, their checks, and the one place that decides which
job scores the input (one submission, a pool, or the descriptor track)."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from disc21spark.commands.common import add_run_arguments, defaults
from disc21spark.core.config import parse_size, parse_span

NAME = "evaluate"
SUMMARY = "score a submission, a pool of submissions, or descriptors"
DESCRIPTION = """\
Score a DISC21 submission on Spark: matching track (pairs) or descriptor track (vectors).

disc21spark evaluate --ground-truth gt.csv --predictions preds.csv --output out/
disc21spark evaluate --ground-truth gt.csv \\
    --query-descriptors queries.h5 --reference-descriptors 'refs_*.h5' --output out/
spark-submit jobs/evaluate.py ...    (the same from a checkout; no master given: local[*])
"""
log = logging.getLogger("disc21spark")


def add_arguments(p: argparse.ArgumentParser) -> None:
    conf = defaults(NAME)
    p.add_argument(
        "--ground-truth", required=True, help="query_id,reference_id (CSV, .csv.gz or Parquet)"
    )
    p.add_argument(
        "--predictions",
        nargs="+",
        help="matching track: query_id,reference_id,score (CSV, .csv.gz or Parquet); a glob, "
        "a folder or several paths make a pool (one file = one submission)",
    )
    p.add_argument(
        "--submission-column",
        help="pool: one Parquet table whose column names the submission of each row",
    )
    p.add_argument(
        "--fail-on-invalid",
        action="store_true",
        help="pool: any invalid submission fails the run (nothing written)",
    )
    p.add_argument(
        "--previous",
        help="pool: a previous run's --output; unchanged submissions reuse its results",
    )
    p.add_argument(
        "--output",
        required=True,
        help="folder for metrics.json, pr_curve.csv/png (a pool: leaderboard.*, pr_curves/)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    p.add_argument(
        "--max-results",
        type=int,
        default=conf["max_results"],
        help="matching track: reject more predictions than this; descriptor track: keep "
        "the best this many pairs over all queries (default %(default)s; 0: no limit)",
    )
    _add_descriptor_arguments(p.add_argument_group("descriptor track"), conf)
    p.add_argument(
        "--partitions",
        type=int,
        default=conf["partitions"],
        help="range partitions of the sort (default: from the size)",
    )
    p.add_argument(
        "--curve-points",
        type=int,
        default=conf["curve_points"],
        help="points kept in pr_curve.csv (metrics are always exact)",
    )
    p.add_argument(
        "--predictions-format",
        choices=("auto", "csv", "parquet"),
        default=conf["predictions_format"],
    )
    p.add_argument(
        "--ground-truth-format",
        choices=("auto", "csv", "parquet"),
        default=conf["ground_truth_format"],
    )
    p.add_argument("--title", default=conf["title"], help="title of the PR-curve plot")
    add_run_arguments(p, NAME)


def _add_descriptor_arguments(d: argparse._ArgumentGroup, conf: dict[str, Any]) -> None:
    d.add_argument(
        "--query-descriptors",
        nargs="+",
        help="query vectors: HDF5 (vectors, image_names), .npy + <name>_ids.txt, or Parquet; globs",
    )
    d.add_argument("--reference-descriptors", nargs="+", help="reference vectors, same formats")
    d.add_argument(
        "--knn",
        type=int,
        default=conf["knn"],
        help="K nearest references per query instead of --max-results",
    )
    d.add_argument(
        "--metric",
        choices=("l2", "ip"),
        default=conf["metric"],
        help="l2: score = -squared distance; ip: inner product",
    )
    d.add_argument(
        "--index",
        default=conf["index"],
        help="FAISS factory string (default %(default)s; Flat is exact), "
        "e.g. 'IVF4096,Flat', 'PCAW256,L2norm,Flat'",
    )
    d.add_argument(
        "--nprobe", type=int, default=conf["nprobe"], help="IVF lists visited per query"
    )
    d.add_argument(
        "--max-dim",
        type=int,
        default=conf["max_dim"],
        help="reject descriptors with more dimensions (default %(default)s)",
    )
    d.add_argument(
        "--broadcast-limit",
        type=parse_size,
        default=conf["broadcast_limit"],
        help="largest index broadcast whole (e.g. 2G, 512M); larger ones are sharded",
    )
    d.add_argument("--score-norm", nargs="+", help="background descriptors for score normalisation")
    d.add_argument(
        "--score-norm-weight",
        type=float,
        default=conf["score_norm_weight"],
        help="β: weight of the background similarity",
    )
    d.add_argument(
        "--score-norm-neighbors",
        type=parse_span,
        default=conf["score_norm_neighbors"],
        help="a..b: background neighbours averaged (default %(default)s)",
    )
    d.add_argument(
        "--train-descriptors",
        nargs="+",
        help="training set of a trained --index (default: the background set, else the references)",
    )
    d.add_argument(
        "--write-predictions", action="store_true", help="also write the pairs as predictions.csv"
    )
    d.add_argument(
        "--query-partitions",
        type=int,
        default=conf["query_partitions"],
        help="query partitions searched in parallel (default: from the size)",
    )


def check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The rules no single option can say; sets args.track."""
    descriptor = args.query_descriptors or args.reference_descriptors
    if descriptor and args.predictions:
        p.error("give --predictions (matching track) or descriptors (descriptor track), not both")
    if not descriptor and not args.predictions:
        p.error("give --predictions, or --query-descriptors and --reference-descriptors")
    if descriptor and not (args.query_descriptors and args.reference_descriptors):
        p.error("the descriptor track needs --query-descriptors and --reference-descriptors")
    if descriptor and args.knn is None and args.max_results < 1:
        p.error("the descriptor track needs --max-results ≥ 1 (or --knn K)")
    if (args.knn is not None and args.knn < 1) or args.max_dim < 1 or (args.nprobe or 1) < 1:
        p.error("--knn, --max-dim and --nprobe must be ≥ 1")
    if (args.query_partitions or 1) < 1:
        p.error("--query-partitions must be ≥ 1")
    args.track = "descriptor" if descriptor else "matching"
    if (
        args.max_results < 0
        or (args.partitions is not None and args.partitions < 1)
        or args.curve_points < 2
    ):
        p.error("--max-results must be ≥ 0, --partitions ≥ 1 and --curve-points ≥ 2")


class Evaluation:
    """The evaluate command's job: picks the job that scores the input once Spark runs
    (telling one submission from a pool looks at the file system), then delegates."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.overwrite = args.overwrite
        self.chosen: Any = None

    def check(self) -> None:
        """The inputs are read by Spark: nothing to check before it starts."""

    def output_folder(self) -> str | None:
        return self.args.output

    def execute(self, spark: Any) -> Any:
        self.chosen = pick(spark, self.args)
        return self.chosen.execute(spark)

    def summary(self, result: Any) -> list[str]:
        return self.chosen.summary(result)


def pick(spark: Any, args: argparse.Namespace) -> Any:
    """The descriptor track, a pool, or one submission scored strictly."""
    if args.track == "descriptor":
        from disc21spark.descriptors.job import DescriptorJob

        return DescriptorJob.from_args(args)
    from disc21spark.pool.job import PoolJob, is_pool

    if is_pool(spark, args.predictions, args.submission_column):
        return PoolJob.from_args(args)
    if args.previous or args.fail_on_invalid:
        log.info("one submission: --previous and --fail-on-invalid do not apply")
    from disc21spark.matching.job import MatchingJob

    return MatchingJob.from_args(args)


def build(args: argparse.Namespace) -> Evaluation:
    return Evaluation(args)
