"""Write an offline image library of any size: the photographs scikit-image ships, then
seeded dead-leaves images with natural-image statistics (no download, byte-identical for a
seed).

spark-submit jobs/make_library.py --output library/ --size 6000 --seed 1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.core.cli import add_run_arguments, run_job, setup_logging  # noqa: E402
from disc21spark.library.job import make_cli  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--output", required=True, help="the library folder to write")
    p.add_argument("--size", type=int, required=True, help="number of images")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--width", type=int, default=512, help="dead-leaves width (default 512)")
    p.add_argument("--height", type=int, default=384, help="dead-leaves height (default 384)")
    p.add_argument("--no-photos", action="store_true", help="dead-leaves images only")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    add_run_arguments(p, profile="images")
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    setup_logging(args.quiet)
    sys.exit(run_job(lambda: make_cli(args), debug=args.debug))
