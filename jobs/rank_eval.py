"""Howe's rank of the original and DISC21's μAP for every (method, test) of a benchmark
folder written by make_queries.

spark-submit jobs/rank_eval.py --bench bench/ --descriptors colorhist,correlogram,tiny,pdq \
    --output report/ --subsets 3 --sizes 500,1000,2000,4000

--descriptors takes built-in methods (colorhist, correlogram, tiny, pdq), user functions
(module:function) and precomputed vectors as name=folder (a folder written by
extract_descriptors --bench).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.core.cli import add_run_arguments, run_job, setup_logging  # noqa: E402
from disc21spark.ranks.job import rank_cli  # noqa: E402


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list such as 500,1000,2000") from None
    if not sizes or sorted(set(sizes)) != sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes must be positive and increasing, such as 500,1000")
    return sizes


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--bench", required=True, help="a folder written by make_queries")
    p.add_argument(
        "--descriptors", default="colorhist,correlogram,tiny,pdq",
        help="methods separated by commas (default %(default)s)",
    )  # fmt: skip
    p.add_argument("--output", required=True, help="the report folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    p.add_argument("--knn", type=int, default=10, help="pairs per query for μAP (default 10)")
    p.add_argument("--subsets", type=int, default=1, help="disjoint library subsets (stability)")
    p.add_argument("--sizes", type=_sizes, default=[], help="library sizes, such as 500,1000,2000")
    p.add_argument("--seed", type=int, default=0, help="subsets, size order and bootstrap")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    p.add_argument("--partitions", type=int, default=None, help="query partitions")
    add_run_arguments(p, profile="images")
    args = p.parse_args(argv)
    if args.knn < 1 or args.subsets < 1 or args.resamples < 10 or args.seed < 0:
        p.error("--knn and --subsets must be ≥ 1, --resamples ≥ 10, --seed ≥ 0")
    if args.partitions is not None and args.partitions < 1:
        p.error("--partitions must be ≥ 1")
    return args


if __name__ == "__main__":
    args = parse_args()
    setup_logging(args.quiet)
    sys.exit(run_job(lambda: rank_cli(args), debug=args.debug))
