"""disc21spark evaluate: the options, their checks, and the one place that decides which
job scores the input (one submission, a pool, or the descriptor track)."""

from __future__ import annotations

import argparse
import logging
import math
import numbers
from functools import partial
from typing import Any

from disc21spark import engine
from disc21spark.commands.common import (
    ValueList,
    add_old_name,
    add_option,
    add_run_arguments,
    defaults,
)
from disc21spark.core.config import parse_counts, parse_size, parse_span

NAME = "evaluate"
SUMMARY = "score a submission, a pool of submissions, or descriptors"
DESCRIPTION = """\
Score a DISC21 submission on Spark: matching track (pairs) or descriptor track (vectors).

disc21spark evaluate --ground-truth gt.csv --predictions preds.csv --output out/
disc21spark evaluate --ground-truth gt.csv \\
    --query-descriptors queries.h5 --reference-descriptors 'refs_*.h5' --output out/
scripts/spark-submit jobs/evaluate.py ...    (the same from a checkout, always on Spark)
"""
log = logging.getLogger("disc21spark")


def add_arguments(p: argparse.ArgumentParser) -> None:
    conf = defaults(NAME)
    p.add_argument(
        "--ground-truth",
        required=True,
        metavar="PATH",
        help="query_id,reference_id (CSV, .csv.gz or Parquet); an empty reference_id marks "
        "a distractor query",
    )
    p.add_argument(
        "--predictions",
        nargs="+",
        metavar="PATH",
        help="matching track: query_id,reference_id,score (CSV, .csv.gz or Parquet); a glob, "
        "a folder or several paths make a pool (one file = one submission)",
    )
    p.add_argument(
        "--output",
        required=True,
        metavar="PATH",
        help="folder for metrics.json, pr_curve.csv/png (a pool: leaderboard.*, pr_curves/)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    add_option(
        p,
        conf,
        "--max-results",
        type=int,
        metavar="N",
        help="matching track: reject more predictions than N; descriptor track: keep the N "
        "best pairs over all queries; 0: no limit",
    )
    _add_pool_arguments(p.add_argument_group("pools"), conf)
    _add_descriptor_arguments(p.add_argument_group("descriptor track"), conf)
    sort = add_option(
        p,
        conf,
        "--sort-partitions",
        key="partitions",
        dest="partitions",
        type=int,
        metavar="N",
        help="partitions of the repeat check's shuffle on Spark, at most 64 "
        "per core (default: adaptive)",
    )
    add_old_name(p, "--partitions", sort)
    add_option(
        p,
        conf,
        "--curve-points",
        type=int,
        metavar="N",
        help="points kept in pr_curve.csv (the metrics always use every point)",
    )
    add_option(
        p,
        conf,
        "--predictions-format",
        choices=("auto", "csv", "parquet"),
        help="how to read --predictions; auto: Parquet for a .parquet or .pq name, else CSV",
    )
    add_option(
        p,
        conf,
        "--ground-truth-format",
        choices=("auto", "csv", "parquet"),
        help="how to read --ground-truth, by the same rule",
    )
    add_option(
        p,
        conf,
        "--title",
        metavar="TEXT",
        help="title of the PR-curve plot (default: the predictions file's name)",
    )
    add_option(
        p,
        conf,
        "--engine",
        choices=("auto", "spark", "local"),
        help="matching track, one file: local scores it in this process (no JVM); auto "
        "does so for a local file up to --local-max-bytes",
    )
    add_option(
        p,
        conf,
        "--local-max-bytes",
        type=parse_size,
        metavar="SIZE",
        help="the largest file --engine auto scores in process, and --pool-plan auto "
        "in one task (such as 256M or 1G)",
    )
    _add_bootstrap_arguments(p.add_argument_group("intervals (bootstrap over queries)"), conf)
    add_run_arguments(p, NAME)


def _add_bootstrap_arguments(g: argparse._ArgumentGroup, conf: dict[str, Any]) -> None:
    # --resamples and --seed: the names rank-eval gives its own bootstrap's
    add_option(
        g,
        conf,
        "--resamples",
        type=int,
        metavar="N",
        help="resamples of the confidence intervals and tiers; 0: none",
    )
    add_option(
        g,
        conf,
        "--confidence",
        type=float,
        metavar="LEVEL",
        help="level of the intervals, and 1 − the tiers' error rate",
    )
    add_option(
        g,
        conf,
        "--seed",
        type=int,
        help="seed of the resample weights: the same seed, the same resamples",
    )
    g.add_argument(
        "--query-groups",
        metavar="PATH",
        help="matching track: a CSV query_id,group (one group per query, such as a bench "
        "folder's query_groups.csv); each group's figures and intervals are reported over "
        "its queries and every query in no group",
    )


def _add_pool_arguments(g: argparse._ArgumentGroup, conf: dict[str, Any]) -> None:
    g.add_argument(
        "--submission-column",
        metavar="NAME",
        help="pool: one Parquet table whose column NAME names the submission of each row",
    )
    g.add_argument(
        "--fail-on-invalid",
        action="store_true",
        help="pool: any invalid submission fails the run (nothing written)",
    )
    g.add_argument(
        "--previous",
        metavar="PATH",
        help="pool: a previous run's --output; unchanged submissions reuse its results",
    )
    add_option(
        g,
        conf,
        "--pool-plan",
        choices=("auto", "per-file", "one-sort"),
        help="pools: a Spark task per submission file, or every row through one sort",
    )


def _add_descriptor_arguments(d: argparse._ArgumentGroup, conf: dict[str, Any]) -> None:
    d.add_argument(
        "--query-descriptors",
        nargs="+",
        metavar="PATH",
        help="query vectors: HDF5 (vectors, image_names), .npy + <name>_ids.txt, or Parquet; globs",
    )
    d.add_argument(
        "--reference-descriptors", nargs="+", metavar="PATH", help="reference vectors, same formats"
    )
    add_option(
        d,
        conf,
        "--knn",
        type=int,
        metavar="K",
        help="keep the K nearest references of each query as its pairs (instead of "
        "the global --max-results cut; default: that cut)",
    )
    distance = add_option(
        d,
        conf,
        "--distance",
        key="metric",
        dest="metric",
        choices=("l2", "ip"),
        help="how vectors are compared: l2 (score = -squared distance, "
        "as the ISC2021 scorer) or ip (inner product)",
    )
    add_old_name(d, "--metric", distance)
    add_option(
        d,
        conf,
        "--index",
        metavar="FACTORY",
        help="FAISS factory string (Flat is exact), such as 'IVF4096,Flat' or "
        "'PCAW256,L2norm,Flat'",
    )
    add_option(
        d,
        conf,
        "--nprobe",
        type=int,
        metavar="N",
        help="IVF lists visited per query (default: FAISS's, 1)",
    )
    add_option(
        d, conf, "--max-dim", type=int, metavar="N", help="reject descriptors with more dimensions"
    )
    add_option(
        d,
        conf,
        "--broadcast-limit",
        type=parse_size,
        metavar="SIZE",
        help="largest index broadcast whole (such as 2G or 512M); larger ones are split in shards",
    )
    norm = d.add_argument(
        "--score-norm-descriptors",
        nargs="+",
        metavar="PATH",
        dest="score_norm",
        help="background descriptors for score normalisation (μAP_SN; isc2021's --train_descs)",
    )
    add_old_name(d, "--score-norm", norm)
    add_option(
        d,
        conf,
        "--score-norm-weight",
        type=float,
        metavar="BETA",
        help="β: weight of the background similarity subtracted",
    )
    add_option(
        d,
        conf,
        "--score-norm-neighbors",
        type=parse_span,
        metavar="A..B",
        help="the background neighbours averaged, A-th to B-th nearest",
    )
    d.add_argument(
        "--train-descriptors",
        nargs="+",
        metavar="PATH",
        help="training set of a trained --index, not score normalisation (default: the "
        "background set, else the references)",
    )
    d.add_argument(
        "--write-predictions", action="store_true", help="also write the pairs as predictions.csv"
    )
    add_option(
        d,
        conf,
        "--query-partitions",
        type=int,
        metavar="N",
        help="query partitions searched in parallel (default: from the size)",
    )
    for name, example, help_text in BUDGETS:
        key = name.lstrip("-").replace("-", "_")
        d.add_argument(
            name,
            action=ValueList,
            convert=partial(parse_counts, example=example),
            default=parse_counts(conf[key]) if conf[key] else None,
            metavar="K" if "knn" in key else "N",
            help=help_text,
        )


# the candidate-budget options: name, an example, help (docs/descriptors.md#budgets)
BUDGETS = (
    (
        "--budgets",
        "10000,50000,100000",
        "global search: also score the best N pairs over all queries for each N, such as "
        "10000,50000,100000,500000, from the one search (budgets.csv, budgets.png); a budget "
        "above --max-results raises the search's cut to it",
    ),
    (
        "--knn-budgets",
        "1,5,10",
        "--knn search: also score the K best references per query for each K, such as "
        "1,5,10, from one search with the largest of them and --knn",
    ),
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
    if descriptor and args.query_groups:
        p.error(
            "--query-groups is for the matching track: score the descriptor track's "
            "--write-predictions file with it"
        )
    if descriptor and args.knn is None and args.max_results < 1:
        p.error("the descriptor track needs --max-results ≥ 1 (or --knn K)")
    if (args.knn is not None and args.knn < 1) or args.max_dim < 1 or _below_one(args.nprobe):
        p.error("--knn, --max-dim and --nprobe must be ≥ 1")
    if _below_one(args.query_partitions):
        p.error("--query-partitions must be ≥ 1")
    if not math.isfinite(args.score_norm_weight):  # NaN would make every score NaN
        p.error("--score-norm-weight must be a finite number")
    if args.resamples < 0 or args.seed < 0 or not 0 < args.confidence < 1:
        p.error("--resamples and --seed must be ≥ 0, --confidence between 0 and 1")
    _check_budgets(p, args, bool(descriptor))
    args.track = "descriptor" if descriptor else "matching"
    if (
        args.max_results < 0
        or (args.partitions is not None and args.partitions < 1)
        or args.curve_points < 2
    ):
        p.error("--max-results must be ≥ 0, --sort-partitions ≥ 1 and --curve-points ≥ 2")


def _check_budgets(p: argparse.ArgumentParser, args: argparse.Namespace, descriptor: bool) -> None:
    """--budgets and --knn-budgets: lists of whole numbers ≥ 1, increasing, each with its
    search (the API hands lists straight in, so the values are checked here)."""
    for name, example, _ in BUDGETS:
        values = getattr(args, name.lstrip("-").replace("-", "_"))
        if values is None:
            continue
        if not descriptor:
            p.error(f"{name} is for the descriptor track (--query-descriptors ...)")
        counts = isinstance(values, (list, tuple)) and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values
        )
        if not counts or not values or values[0] < 1 or sorted(set(values)) != list(values):
            shown = ",".join(map(str, values)) if isinstance(values, (list, tuple)) else values
            p.error(
                f"{name} must be whole numbers ≥ 1 in increasing order, such as "
                f"{example} (got {shown!r})"
            )
        setattr(args, name.lstrip("-").replace("-", "_"), [int(v) for v in values])
    if args.budgets is not None and args.knn is not None:
        p.error("--budgets cuts the global search (--max-results); with --knn give --knn-budgets")
    if args.knn_budgets is not None and args.knn is None:
        p.error("--knn-budgets cuts the kNN search: give --knn K as well")


def _below_one(value: int | None) -> bool:
    # None: the job decides; 0 is a value given, and refused
    return value is not None and value < 1


class Evaluation:
    """The evaluate command's job: the engine is chosen before anything starts
    (``engine.choose``), then the job that scores the input (telling one submission from
    a pool looks at the file system, so on Spark that waits for the session)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.overwrite = args.overwrite
        self.choice = engine.DISTRIBUTED
        self.chosen: Any = None

    def check(self) -> None:
        """The engine: decided here, so that the runner starts Spark only if it is used."""
        self.choice = choice_of(self.args)

    @property
    def needs_spark(self) -> bool:
        return self.choice.needs_spark

    def output_folder(self) -> str | None:
        return self.args.output

    def settings(self) -> dict[str, Any]:
        """What the run record keeps of the command line: the options of this run's
        track (a matching run does not record the descriptor track's, nor a descriptor
        run the pools')."""
        return track_options(self.args)

    def execute(self, spark: Any) -> Any:
        self.chosen = pick(spark, self.args, self.choice)
        return self.chosen.execute(spark)

    def summary(self, result: Any) -> list[str]:
        return self.chosen.summary(result)


def track_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``args`` less those of the other track's group of options."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    other = "pools" if args.track == "descriptor" else "descriptor track"
    (group,) = [g for g in parser._action_groups if g.title == other]
    dropped = {action.dest for action in group._group_actions}
    return {name: value for name, value in vars(args).items() if name not in dropped}


def choice_of(args: argparse.Namespace) -> engine.Choice:
    """``engine.choose`` for this command line (see --engine, --pool-plan,
    --local-max-bytes); InputError when local is asked for and cannot be used."""
    return engine.choose(
        args.predictions or [],
        args.ground_truth,
        track=args.track,
        engine=args.engine,
        plan=args.pool_plan,
        local_max_bytes=args.local_max_bytes,
        master=args.master,
        output=args.output,
        submission_column=args.submission_column,
        predictions_format=args.predictions_format,
    )


def pick(spark: Any, args: argparse.Namespace, choice: engine.Choice) -> Any:
    """The descriptor track, a pool, or one submission scored strictly, on ``choice``."""
    from disc21spark.matching.job import MatchingJob

    if not choice.needs_spark:  # one local file, checked by engine.choose
        return MatchingJob.from_args(args, choice)
    if args.track == "descriptor":
        from disc21spark.descriptors.job import DescriptorJob

        return DescriptorJob.from_args(args)
    from disc21spark.pool.job import PoolJob, is_pool

    if is_pool(spark, args.predictions, args.submission_column):
        return PoolJob.from_args(args)
    if args.previous or args.fail_on_invalid:
        log.info("one submission: --previous and --fail-on-invalid do not apply")
    return MatchingJob.from_args(args, choice)


def build(args: argparse.Namespace) -> Evaluation:
    return Evaluation(args)
