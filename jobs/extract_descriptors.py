"""Describe images with a baseline descriptor on Spark; write what the descriptor track reads.

spark-submit jobs/extract_descriptors.py --images 'library/**/*.jpg' --method colorhist --output refs.h5
spark-submit jobs/extract_descriptors.py --bench bench/ --method tiny --output bench/descriptors/tiny/

methods: colorhist (Swain & Ballard 1991), correlogram (Huang et al. 1997), tiny (16×16 grey
thumbnail, Torralba et al. 2008), pdq (Meta's PDQ hash), or a user function module:function
mapping an RGB uint8 array to a vector (importable on the executors).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.core.cli import add_run_arguments, run_job, setup_logging  # noqa: E402
from disc21spark.ranks.extract_job import extract_cli  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--images", nargs="+", help="folders, globs, root/**/*.jpg (id = file name)")
    source.add_argument("--bench", help="a make_queries folder: its references and queries")
    p.add_argument("--method", required=True, help="colorhist, correlogram, tiny, pdq or module:function")
    p.add_argument(
        "--output", required=True,
        help="a .h5, .parquet or .npy file (--images), or a folder (--bench)",
    )  # fmt: skip
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("--partitions", type=int, default=None, help="tasks that describe images")
    add_run_arguments(p, profile="images")
    args = p.parse_args(argv)
    if args.partitions is not None and args.partitions < 1:
        p.error("--partitions must be ≥ 1")
    return args


if __name__ == "__main__":
    args = parse_args()
    setup_logging(args.quiet)
    sys.exit(run_job(lambda: extract_cli(args), debug=args.debug))
