"""disc21spark extract: baseline descriptors of images, in the descriptor track's formats."""

from __future__ import annotations

import argparse
from typing import Any

from disc21spark.commands.common import (
    add_image_partitions,
    add_run_arguments,
    defaults,
)
from disc21spark.commands.requests import ExtractRequest

NAME = "extract"
SUMMARY = "describe images with a baseline descriptor (files the descriptor track reads)"
DESCRIPTION = """\
Describe images with a baseline descriptor on Spark; write what the descriptor track reads.

disc21spark extract --images library/ --method colorhist --output refs.h5
disc21spark extract --bench bench/ --method tiny --output bench/descriptors/tiny/
scripts/spark-submit jobs/extract_descriptors.py ...    (the same from a checkout)

methods: colorhist (Swain & Ballard 1991), correlogram (Huang et al. 1997), tiny (16×16 grey
thumbnail, Torralba et al. 2008), pdq (Meta's PDQ hash), or a user function module:function
mapping an RGB uint8 array to a vector (importable on the executors).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    conf = defaults(NAME)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--images",
        nargs="+",
        metavar="PATH",
        help="image files: folders (searched recursively), globs, root/**/*.jpg (id = file name)",
    )
    source.add_argument(
        "--bench",
        metavar="PATH",
        help="a bench folder (make-queries --output): its references and queries",
    )
    p.add_argument(
        "--method",
        required=True,
        metavar="METHOD",
        help="colorhist, correlogram, tiny, pdq or module:function",
    )
    p.add_argument(
        "--output",
        required=True,
        metavar="PATH",
        help="a .h5, .parquet or .npy file (--images), or a folder (--bench)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    add_image_partitions(p, conf, 128)
    add_run_arguments(p, NAME)


REQUEST = ExtractRequest


def job_of(request: ExtractRequest) -> Any:
    """The job of a checked request."""
    from disc21spark.ranks.extract_job import ExtractJob

    return ExtractJob.from_options(request)
