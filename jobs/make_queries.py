"""Build an altered-image benchmark from an image library (Howe 2000; DISC21-style edits).

spark-submit jobs/make_queries.py --images 'library/**/*.jpg' --output bench/ \
    --tests crop:50,jumble:4x4,lowcon:80 --queries-per-test 500 --distractors 0.5 --seed 7
python jobs/make_queries.py ...          (no master given: local[*])
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.core.cli import add_run_arguments, defaults, run_job, setup_logging  # noqa: E402
from disc21spark.queries.job import make_cli  # noqa: E402
from disc21spark.queries.transforms import KINDS  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    conf = defaults("queries")
    tests = "\n".join(f"  {k.usage:<12} {k.about}" for k in KINDS.values())
    p = argparse.ArgumentParser(
        description=__doc__,
        epilog=f"tests (compose with +, separate with commas):\n{tests}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--images",
        nargs="+",
        required=True,
        help="image files: folders (searched recursively), globs, root/**/*.jpg",
    )
    p.add_argument("--output", required=True, help="the benchmark folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    p.add_argument("--tests", default=conf.get("tests", "crop:50,jumble:4x4,lowcon:80"))
    p.add_argument(
        "--queries-per-test", type=int, default=int(conf.get("queries_per_test", 100))
    )
    p.add_argument(
        "--distractors",
        type=float,
        default=float(conf.get("distractors", 0)),
        help="fraction of each test's queries whose original is held out of the references",
    )
    p.add_argument("--seed", type=int, default=int(conf.get("seed", 0)))
    p.add_argument("--format", choices=("png", "jpeg"), default=conf.get("format", "png"))
    p.add_argument(
        "--sheet-per-test", type=int, default=int(conf.get("sheet_per_test", 4)),
        help="queries per test on contact_sheet.png",
    )
    p.add_argument("--partitions", type=int, default=None, help="tasks that alter images")
    add_run_arguments(p, profile="images")
    args = p.parse_args(argv)
    if args.seed < 0 or (args.partitions is not None and args.partitions < 1):
        p.error("--seed must be ≥ 0 and --partitions ≥ 1")
    if args.sheet_per_test < 0:
        p.error("--sheet-per-test must be ≥ 0")
    return args


if __name__ == "__main__":
    args = parse_args()
    setup_logging(args.quiet)
    sys.exit(run_job(lambda: make_cli(args), debug=args.debug))
