"""Score a DISC21 submission on Spark: matching track (pairs) or descriptor track (vectors).

spark-submit jobs/evaluate.py --ground-truth gt.csv --predictions preds.csv --output out/
spark-submit jobs/evaluate.py --ground-truth gt.csv \
    --query-descriptors queries.h5 --reference-descriptors 'refs_*.h5' --output out/
python jobs/evaluate.py ...          (no master given: local[*])
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.core.cli import add_run_arguments, defaults, run_job, setup_logging  # noqa: E402
from disc21spark.descriptors import job as descriptor_track  # noqa: E402
from disc21spark.pool import job as pool  # noqa: E402


def _bytes(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower().removesuffix("b")
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size such as 2G or 512M") from None
    if value < 1:
        raise argparse.ArgumentTypeError("the broadcast limit must be positive")
    return int(value)


def _span(text: str) -> tuple[int, int]:
    a, sep, b = text.partition("..")
    try:
        first, last = (int(a), int(b)) if sep else (int(a), int(a))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a range such as 10..20") from None
    if not 1 <= first <= last:
        raise argparse.ArgumentTypeError(f"'{text}': need 1 ≤ a ≤ b")
    return first, last


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    conf = defaults("matching")
    dconf = defaults("descriptor")
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
        default=int(conf.get("max_results", 500_000)),
        help="matching track: reject more predictions than this; descriptor track: keep "
        "the best this many pairs over all queries (default %(default)s; 0: no limit)",
    )
    d = p.add_argument_group("descriptor track")
    d.add_argument(
        "--query-descriptors",
        nargs="+",
        help="query vectors: HDF5 (vectors, image_names), .npy + <name>_ids.txt, or Parquet; globs",
    )
    d.add_argument("--reference-descriptors", nargs="+", help="reference vectors, same formats")
    d.add_argument(
        "--knn",
        type=int,
        default=None,
        help="K nearest references per query instead of --max-results",
    )
    d.add_argument(
        "--metric",
        choices=("l2", "ip"),
        default=dconf.get("metric", "l2"),
        help="l2: score = -squared distance; ip: inner product",
    )
    d.add_argument(
        "--index",
        default=dconf.get("index", "Flat"),
        help="FAISS factory string (default %(default)s; Flat is exact), "
        "e.g. 'IVF4096,Flat', 'PCAW256,L2norm,Flat'",
    )
    d.add_argument("--nprobe", type=int, default=None, help="IVF lists visited per query")
    d.add_argument(
        "--max-dim",
        type=int,
        default=int(dconf.get("max_dim", 256)),
        help="reject descriptors with more dimensions (default %(default)s)",
    )
    d.add_argument(
        "--broadcast-limit",
        type=_bytes,
        default=_bytes(dconf.get("broadcast_limit", "2G")),
        help="largest index broadcast whole (e.g. 2G, 512M); larger ones are sharded",
    )
    d.add_argument("--score-norm", nargs="+", help="background descriptors for score normalisation")
    d.add_argument(
        "--score-norm-weight",
        type=float,
        default=1.0,
        help="β: weight of the background similarity",
    )
    d.add_argument(
        "--score-norm-neighbors",
        type=_span,
        default=(1, 1),
        help="a..b: background neighbours averaged (default 1..1)",
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
        default=None,
        help="query partitions searched in parallel (default: from the size)",
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
    add_run_arguments(p, profile=conf.get("profile", "local"))
    args = p.parse_args(argv)
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
    return args


if __name__ == "__main__":
    args = parse_args()
    setup_logging(args.quiet)
    track = descriptor_track if args.track == "descriptor" else pool
    sys.exit(run_job(lambda: track.evaluate_cli(args), debug=args.debug))
