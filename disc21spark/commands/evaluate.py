"""disc21spark evaluate: the checks of its options (evaluate_options.py), and the one place
that decides which job scores the input (one submission, a pool, or the descriptor track)."""

from __future__ import annotations

import argparse
import logging
import math
import numbers
from typing import Any

from disc21spark import engine

# NAME and add_arguments: this command's, as in every command module (commands/__init__.py)
from disc21spark.commands.evaluate_options import (
    BUDGETS,
    DESCRIPTOR_TRACK,
    INTERVALS,
    POOLS,
    option_groups,
)
from disc21spark.commands.evaluate_options import NAME as NAME
from disc21spark.commands.evaluate_options import add_arguments as add_arguments

SUMMARY = "score a submission, a pool of submissions, or descriptors"
DESCRIPTION = """\
Score a DISC21 submission on Spark: matching track (pairs) or descriptor track (vectors).

disc21spark evaluate --ground-truth gt.csv --predictions preds.csv --output out/
disc21spark evaluate --ground-truth gt.csv \\
    --query-descriptors queries.h5 --reference-descriptors 'refs_*.h5' --output out/
scripts/spark-submit jobs/evaluate.py ...    (the same from a checkout, with a cluster's Spark)
"""
log = logging.getLogger("disc21spark")


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
    _refuse_the_other_tracks(p, args)
    if (
        args.max_results < 0
        or (args.sort_partitions is not None and args.sort_partitions < 1)
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


# why an option given on the other track is refused (``args.given``: the options given)
OTHER_TRACK = {
    "descriptor": {
        INTERVALS: "is for the matching track: the descriptor track computes no interval "
        "(score its --write-predictions file for them)",
        POOLS: "is for a pool of predictions files, not the descriptor track",
    },
    "matching": {DESCRIPTOR_TRACK: "is for the descriptor track (--query-descriptors ...)"},
}


def _refuse_the_other_tracks(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """An option of the other track's groups, given, is refused with one line: no option
    is silently ignored."""
    groups = option_groups()
    for title, why in OTHER_TRACK[args.track].items():
        for dest, option in groups[title].items():
            if dest in getattr(args, "given", ()):
                p.error(f"{option} {why}")


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
        return None if self.args.explain else self.args.output

    def settings(self) -> dict[str, Any]:
        """What the run record keeps of the command line: the options of this run's
        track (a matching run does not record the descriptor track's, nor a descriptor
        run the pools')."""
        return track_options(self.args)

    def execute(self, spark: Any) -> Any:
        self.choice = settled(spark, self.args, self.choice)
        if self.args.explain:
            return self.choice
        self.chosen = pick(spark, self.args, self.choice)
        return self.chosen.execute(spark)

    def summary(self, result: Any) -> list[str]:
        if self.args.explain:
            return result.lines()
        return self.chosen.summary(result)


def track_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``args`` less those of the other track's group of options."""
    other = POOLS if args.track == "descriptor" else DESCRIPTOR_TRACK
    dropped = {*option_groups()[other], "given"}
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


def settled(spark: Any, args: argparse.Namespace, choice: engine.Choice) -> engine.Choice:
    """``engine.settle`` for this command line, once the session (if any) is up."""
    return engine.settle(
        spark,
        choice,
        args.predictions or [],
        track=args.track,
        submission_column=args.submission_column,
        fmt=args.predictions_format,
    )


def pick(spark: Any, args: argparse.Namespace, choice: engine.Choice) -> Any:
    """The job for ``choice``, settled (``engine.settle``): the descriptor track, a pool,
    or one submission scored strictly."""
    from disc21spark.matching.job import MatchingJob

    if choice.kind == "descriptor track":
        from disc21spark.descriptors.job import DescriptorJob

        return DescriptorJob.from_args(args)
    if choice.kind == "pool":
        from disc21spark.pool.job import PoolJob

        return PoolJob.from_args(args, choice)
    if args.previous or args.fail_on_invalid:
        log.info("one submission: --previous and --fail-on-invalid do not apply")
    return MatchingJob.from_args(args, choice)


def build(args: argparse.Namespace) -> Evaluation:
    return Evaluation(args)
