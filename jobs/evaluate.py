"""Score a DISC21 matching-track submission on Spark.

spark-submit jobs/evaluate.py --ground-truth gt.csv --predictions preds.csv --output out/
python jobs/evaluate.py ...          (no master given: local[*])
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.cli import defaults, run_job, setup_logging  # noqa: E402
from disc21spark.matching import evaluate_cli  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    conf = defaults("matching")
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--ground-truth", required=True, help="query_id,reference_id (CSV, .csv.gz or Parquet)"
    )
    p.add_argument(
        "--predictions", required=True, help="query_id,reference_id,score (CSV, .csv.gz or Parquet)"
    )
    p.add_argument(
        "--output", required=True, help="folder for metrics.json, pr_curve.csv, pr_curve.png"
    )
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    p.add_argument(
        "--max-results",
        type=int,
        default=int(conf.get("max_results", 500_000)),
        help="reject more predictions than this (default %(default)s; 0: no limit)",
    )
    p.add_argument(
        "--partitions",
        type=int,
        default=None,
        help="range partitions of the sort (default: from the size)",
    )
    p.add_argument(
        "--curve-points",
        type=int,
        default=int(conf.get("curve_points", 5000)),
        help="points kept in pr_curve.csv (metrics are always exact)",
    )
    p.add_argument("--predictions-format", choices=("auto", "csv", "parquet"), default="auto")
    p.add_argument("--ground-truth-format", choices=("auto", "csv", "parquet"), default="auto")
    p.add_argument("--title", default=None, help="title of the PR-curve plot")
    p.add_argument(
        "--master", default=None, help="Spark master (default: spark-submit's, else the profile's)"
    )
    p.add_argument(
        "--profile", default=conf.get("profile", "local"), help="Spark profile in conf/spark/"
    )
    p.add_argument("--quiet", action="store_true", help="no phase log lines")
    p.add_argument("--debug", action="store_true", help="full traces and Spark logs")
    args = p.parse_args(argv)
    if (
        args.max_results < 0
        or (args.partitions is not None and args.partitions < 1)
        or args.curve_points < 2
    ):
        p.error("--max-results must be ≥ 0, --partitions ≥ 1 and --curve-points ≥ 2")
    return args


if __name__ == "__main__":
    args = parse_args()
    setup_logging(args.quiet)
    sys.exit(run_job(lambda: evaluate_cli(args), debug=args.debug))
