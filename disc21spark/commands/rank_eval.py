"""disc21spark rank-eval: Howe's rank of the original and DISC21's μAP on a benchmark."""

from __future__ import annotations

import argparse
from typing import Any

from disc21spark.commands.common import (
    ValueList,
    add_old_name,
    add_option,
    add_run_arguments,
    defaults,
)
from disc21spark.commands.requests import RankRequest
from disc21spark.core.config import parse_sizes

NAME = "rank-eval"
SUMMARY = "rank of the original and μAP of descriptors on a make-queries benchmark"
DESCRIPTION = """\
Howe's rank of the original and DISC21's μAP for every (method, test) of a benchmark
folder written by make-queries.

disc21spark rank-eval --bench bench/ --methods colorhist,correlogram,tiny,pdq \\
    --output report/ --subsets 3 --sizes 500,1000,2000,4000
scripts/spark-submit jobs/rank_eval.py ...    (the same from a checkout)

--methods takes built-in methods (colorhist, correlogram, tiny, pdq), user functions
(module:function) and precomputed vectors as name=folder (a folder written by
extract --bench). Each method is compared by its own distance (colorhist: L1,
i.e. histogram intersection; correlogram: Huang's d1; tiny: inner product; pdq: L2);
--distance colorhist=l2 chooses another.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    conf = defaults(NAME)
    p.add_argument(
        "--bench", required=True, metavar="PATH", help="a bench folder (make-queries --output)"
    )
    methods = add_option(
        p,
        conf,
        "--methods",
        action=ValueList,
        metavar="METHOD",
        help="methods to compare (see above), separated by spaces or commas",
    )
    add_old_name(p, "--descriptors", methods)
    p.add_argument("--output", required=True, metavar="PATH", help="the report folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    _add_measure_arguments(p, conf)
    _add_ranking_arguments(p, conf)
    add_run_arguments(p, NAME)


def _add_measure_arguments(p: argparse.ArgumentParser, conf: dict[str, Any]) -> None:
    # what the report measures: μAP's pairs, the stability subsets, the growth curve, the
    # bootstrap
    add_option(
        p,
        conf,
        "--knn",
        type=int,
        metavar="K",
        help="keep the K nearest references of each query as its pairs (for μAP)",
    )
    add_option(
        p,
        conf,
        "--subsets",
        type=int,
        metavar="N",
        help="disjoint library subsets each query is also ranked in (stability)",
    )
    p.add_argument(
        "--sizes",
        action=ValueList,
        convert=parse_sizes,
        default=conf["sizes"] or [],
        metavar="N",
        help="library sizes of the growth curve, such as 500,1000,2000 (default: no growth curve)",
    )
    add_option(
        p,
        conf,
        "--seed",
        type=int,
        metavar="N",
        help="subsets, size order and bootstrap: the same seed, the same report",
    )
    add_option(p, conf, "--resamples", type=int, metavar="N", help="bootstrap resamples")


def _add_ranking_arguments(p: argparse.ArgumentParser, conf: dict[str, Any]) -> None:
    # how each query's references are ranked: in parallel, ties, each method's distance
    queries = add_option(
        p,
        conf,
        "--query-partitions",
        type=int,
        metavar="N",
        help="query partitions ranked in parallel (default: 2 × the cores)",
    )
    add_old_name(p, "--partitions", queries)
    add_option(
        p,
        conf,
        "--ties",
        choices=("pessimistic", "mid"),
        help="a reference tied with the original counts against the method (pessimistic, "
        "as DISC21) or shares the tie group's mean place (mid)",
    )
    p.add_argument(
        "--distance",
        action=ValueList,
        default="",
        metavar="METHOD=DISTANCE",
        help="how a method's vectors are compared, over its own, such as colorhist=l2 "
        "(l2, ip, l1 = histogram intersection's order, d1 = Huang's; default: each "
        "method's own)",
    )


REQUEST = RankRequest


def job_of(request: RankRequest) -> Any:
    """The job of a checked request."""
    from disc21spark.ranks.job import RankJob

    return RankJob.from_options(request)
