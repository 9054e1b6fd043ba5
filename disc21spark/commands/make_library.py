"""disc21spark make-library: an offline image library of any size."""

from __future__ import annotations

import argparse
from typing import Any

from disc21spark.commands.common import add_option, add_run_arguments, defaults
from disc21spark.commands.requests import LibraryRequest

NAME = "make-library"
SUMMARY = "write an offline image library (photographs, then dead-leaves images)"
DESCRIPTION = """\
Write an offline image library of any size: the photographs scikit-image ships, then
seeded dead-leaves images whose leaves are windows of the photographs installed packages
ship (one common pool of colours and textures, like a photo collection; no download,
byte-identical for a seed).

disc21spark make-library --output library/ --size 6000 --seed 1
scripts/spark-submit jobs/make_library.py ...    (the same from a checkout)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    conf = defaults(NAME)
    p.add_argument("--output", required=True, metavar="PATH", help="the library folder to write")
    p.add_argument(
        "--size",
        type=int,
        required=True,
        metavar="N",
        help="number of images (the shipped photographs first)",
    )
    add_option(
        p,
        conf,
        "--seed",
        type=int,
        metavar="N",
        help="the same seed gives a byte-identical library",
    )
    add_option(p, conf, "--width", type=int, metavar="PX", help="dead-leaves width")
    add_option(p, conf, "--height", type=int, metavar="PX", help="dead-leaves height")
    add_option(
        p,
        conf,
        "--leaves",
        choices=("textured", "flat"),
        help="fill each leaf with a window of a shipped photograph (textured) or one "
        "colour of a per-image palette (flat)",
    )
    p.add_argument("--no-photos", action="store_true", help="dead-leaves images only")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    add_run_arguments(p, NAME)


# the plan lists every image on the driver (a few hundred bytes each) before Spark starts:
# ten million images (≈ 300 GB of JPEG) is beyond any use, 10^12 would exhaust the memory
REQUEST = LibraryRequest


def job_of(request: LibraryRequest) -> Any:
    """The job of a checked request."""
    from disc21spark.library.job import LibraryJob

    return LibraryJob.from_options(request)
