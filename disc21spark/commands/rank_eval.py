"""disc21spark rank-eval: Howe's rank of the original and DISC21's μAP on a benchmark."""

from __future__ import annotations

import argparse
from typing import Any

from disc21spark.commands.common import add_option, add_run_arguments, defaults
from disc21spark.core.config import parse_sizes

NAME = "rank-eval"
SUMMARY = "rank of the original and μAP of descriptors on a make-queries benchmark"
DESCRIPTION = """\
Howe's rank of the original and DISC21's μAP for every (method, test) of a benchmark
folder written by make_queries.

disc21spark rank-eval --bench bench/ --descriptors colorhist,correlogram,tiny,pdq \\
    --output report/ --subsets 3 --sizes 500,1000,2000,4000
spark-submit jobs/rank_eval.py ...    (the same from a checkout)

--descriptors takes built-in methods (colorhist, correlogram, tiny, pdq), user functions
(module:function) and precomputed vectors as name=folder (a folder written by
extract_descriptors --bench). Each method is compared by its own distance (colorhist: L1,
i.e. histogram intersection; correlogram: Huang's d1; tiny: inner product; pdq: L2);
--distance colorhist=l2 chooses another.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    conf = defaults(NAME)
    p.add_argument("--bench", required=True, help="a folder written by make_queries")
    add_option(p, conf, "--descriptors", help="methods separated by commas (default %(default)s)")
    p.add_argument("--output", required=True, help="the report folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    add_option(p, conf, "--knn", type=int, help="pairs per query for μAP (default %(default)s)")
    add_option(p, conf, "--subsets", type=int, help="disjoint library subsets (stability)")
    p.add_argument(
        "--sizes", type=parse_sizes, default=conf["sizes"] or [],
        help="library sizes, such as 500,1000,2000",
    )  # fmt: skip
    add_option(p, conf, "--seed", type=int, help="subsets, size order and bootstrap")
    add_option(p, conf, "--resamples", type=int, help="bootstrap resamples")
    add_option(p, conf, "--partitions", type=int, help="query partitions")
    add_option(p, conf, "--ties", choices=("pessimistic", "mid"),
               help="a reference tied with the original counts against the method (pessimistic, "
                    "as DISC21) or shares the tie group's mean place (mid) (default %(default)s)")  # fmt: skip
    p.add_argument(
        "--distance", default="",
        help="comparison per method, overriding its own, such as colorhist=l2,correlogram=l1 "
             "(l2, ip, l1 = histogram intersection's order, d1 = Huang's)",
    )  # fmt: skip
    add_run_arguments(p, NAME)


def check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.knn < 1 or args.subsets < 1 or args.resamples < 10 or args.seed < 0:
        p.error("--knn and --subsets must be ≥ 1, --resamples ≥ 10, --seed ≥ 0")
    if args.partitions is not None and args.partitions < 1:
        p.error("--partitions must be ≥ 1")


def build(args: argparse.Namespace) -> Any:
    from disc21spark.ranks.job import RankJob

    return RankJob.from_args(args)
