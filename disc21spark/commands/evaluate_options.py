"""disc21spark evaluate's options, in the groups --help shows (inputs, pools, the
descriptor track, scoring, engine, intervals); commands/evaluate.py checks them."""

from __future__ import annotations

import argparse
import sys
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
from disc21spark.core.config import parse_counts, parse_limit, parse_size, parse_span

NAME = "evaluate"
# --help's groups of the options of one track only (evaluate_request.py lists the same
# options, and refuses them on the other track)
POOLS, DESCRIPTOR_TRACK, INTERVALS = (
    "pools",
    "descriptor track",
    "intervals (bootstrap over queries)",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    conf = defaults(NAME)
    _add_input_arguments(p, conf)
    _add_pool_arguments(p.add_argument_group(POOLS), conf)
    _add_descriptor_arguments(p.add_argument_group(DESCRIPTOR_TRACK), conf)
    _add_scoring_arguments(p, conf)
    _add_engine_arguments(p, conf)
    _add_bootstrap_arguments(p.add_argument_group(INTERVALS), conf)
    add_run_arguments(p, NAME)


def _add_input_arguments(p: argparse.ArgumentParser, conf: dict[str, Any]) -> None:
    # what is scored, and where its results go
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


def _add_scoring_arguments(p: argparse.ArgumentParser, conf: dict[str, Any]) -> None:
    # how the matching track is read, scored and drawn
    sort = add_option(
        p,
        conf,
        "--sort-partitions",
        type=int,
        metavar="N",
        help="on Spark's distributed plan, shuffle the rows' keys into N partitions by "
        "query before the checks, at most 64 per core (default: no such shuffle)",
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
    p.add_argument(
        "--per-query",
        action="store_true",
        help="matching track: also write queries.csv and queries.parquet, one row per query "
        "of the ground truth (its predictions, the rank and score of its best true pair, the "
        "wrong reference above it, its share of μAP); a pool: every submission's, "
        "queries_missed.csv and queries_separating.csv",
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


def _add_engine_arguments(p: argparse.ArgumentParser, conf: dict[str, Any]) -> None:
    add_option(
        p,
        conf,
        "--engine",
        choices=("auto", "spark", "local"),
        help="matching track, one file: local scores it in this process (no JVM), read "
        "in batches whatever its size; auto does so for one local file",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="add to a command: print its engine, plan and why, then stop (nothing is scored, "
        "--output is left as it is; on Spark the inputs are listed to decide)",
    )
    add_option(
        p,
        conf,
        "--local-max-bytes",
        type=parse_limit,
        metavar="SIZE",
        help="the memory the in-process engine plans for (it reads a file in batches of "
        "a sixteenth of it, 2M to 64M), and the largest file --pool-plan auto scores in "
        "one task (such as 256M or 1G; auto: in process, sized from the memory "
        "available; in a task, 256M)",
    )


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
        help="matching track: a CSV query_id,group (at most one group per query, such as "
        "a bench folder's query_groups.csv); each group's figures and intervals are "
        "reported over its queries and every query in no group (on DISC21, the "
        "distractors left out of the file count in every group)",
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
    g.add_argument(
        "--private-queries",
        metavar="PATH",
        help="pool: a CSV with a query_id column naming the private board's queries; every "
        "other query of the ground truth makes the public board, written to --output",
    )
    g.add_argument(
        "--private-output",
        metavar="DIR",
        help="pool: the folder of the private board and its rank changes (never inside "
        "--output); needs --private-queries",
    )
    g.add_argument(
        "--freeze",
        action="store_true",
        help="pool: publish --output frozen (FROZEN.json): no later run replaces it, not even "
        "with --overwrite",
    )
    g.add_argument(
        "--compare-to",
        metavar="PATH",
        help="pool: a board to compare with (a frozen one, typically): changes.csv in "
        "--output gives each submission's rank, figure and validity changes",
    )
    g.add_argument(
        "--queries-needed",
        type=float,
        metavar="DIFFERENCE",
        help="pool: the queries a μAP difference this large between neighbours would need "
        "to be detectable, per place (queries_needed.csv; needs --resamples > 0)",
    )
    add_option(
        g,
        conf,
        "--pool-plan",
        choices=engine.PLANS,
        type=_plan,
        help="pools: a Spark task per submission file, or every row read and counted in "
        "the JVM, spread over the cluster (distributed; 0.1.0's one-sort)",
    )


def _plan(name: str) -> str:
    """A --pool-plan value (or defaults.ini's) as named now, an old name after one
    warning line."""
    return engine.plan_named(name, lambda text: print(f"warning: {text}", file=sys.stderr))


def _add_descriptor_arguments(d: argparse._ArgumentGroup, conf: dict[str, Any]) -> None:
    _add_search_arguments(d, conf)
    _add_score_norm_arguments(d, conf)
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
    _add_budget_arguments(d, conf)


def _add_search_arguments(d: argparse._ArgumentGroup, conf: dict[str, Any]) -> None:
    # the vectors, and how the references are searched for each query's
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


def _add_score_norm_arguments(d: argparse._ArgumentGroup, conf: dict[str, Any]) -> None:
    norm = d.add_argument(
        "--score-norm-descriptors",
        nargs="+",
        metavar="PATH",
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


def _add_budget_arguments(d: argparse._ArgumentGroup, conf: dict[str, Any]) -> None:
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
