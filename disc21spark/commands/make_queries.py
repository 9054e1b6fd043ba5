"""disc21spark make-queries: an altered-image benchmark from an image library."""

from __future__ import annotations

import argparse
from typing import Any

from disc21spark.commands.common import (
    ValueList,
    add_image_partitions,
    add_old_name,
    add_option,
    add_run_arguments,
    defaults,
)
from disc21spark.commands.requests import QueriesRequest

NAME = "make-queries"
SUMMARY = "build an altered-image benchmark (queries, ground truth) from a library"
DESCRIPTION = """\
Build an altered-image benchmark from an image library (Howe 2000; DISC21-style edits).

disc21spark make-queries --images library/ --output bench/ \\
    --tests crop:50,jumble:4x4,lowcon:80 --queries-per-test 500 --distractors 0.5 --seed 7
scripts/spark-submit jobs/make_queries.py ...    (the same from a checkout)
"""


def epilog() -> str:
    try:  # the tests' module needs numpy (Pillow only once pixels are altered)
        from disc21spark.queries.transforms import KINDS
    except ImportError as e:
        return f"tests: crop:K, jumble:RxC, lowcon:K, ... (the full list needs {e.name}, not installed)"

    tests = "\n".join(f"  {k.usage:<12} {k.about}" for k in KINDS.values())
    sweep = "  NAME:A..B:S  a sweep: one test per value, e.g. crop:90..10:10, jumble:2x2..8x8:2"
    return f"tests (compose with +, separate with commas):\n{tests}\n{sweep}"


def add_arguments(p: argparse.ArgumentParser) -> None:
    conf = defaults(NAME)
    p.add_argument(
        "--images",
        nargs="+",
        required=True,
        metavar="PATH",
        help="image files: folders (searched recursively), globs, root/**/*.jpg",
    )
    p.add_argument("--output", required=True, metavar="PATH", help="the bench folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    _add_test_arguments(p, conf)
    _add_writing_arguments(p, conf)
    add_run_arguments(p, NAME)


def _add_test_arguments(p: argparse.ArgumentParser, conf: dict[str, Any]) -> None:
    # what the bench holds: the tests, their queries and distractors, from the seed
    add_option(
        p,
        conf,
        "--tests",
        action=ValueList,
        metavar="TEST",
        help="the alterations (listed below), separated by spaces or commas",
    )
    add_option(
        p,
        conf,
        "--queries-per-test",
        type=int,
        metavar="N",
        help="source images each test alters (the same N for every test)",
    )
    add_option(
        p,
        conf,
        "--distractors",
        type=float,
        metavar="FRACTION",
        help="fraction of each test's queries whose original is held out of the references",
    )
    add_option(
        p, conf, "--seed", type=int, metavar="N", help="the same seed gives byte-identical queries"
    )


def _add_writing_arguments(p: argparse.ArgumentParser, conf: dict[str, Any]) -> None:
    # how the queries are written: their format, the contact sheet, the Spark tasks
    fmt = add_option(
        p,
        conf,
        "--query-format",
        choices=("png", "jpeg"),
        help="the query images' format: png (lossless) or jpeg (quality 95)",
    )
    add_old_name(p, "--format", fmt)
    add_option(
        p,
        conf,
        "--sheet-per-test",
        type=int,
        metavar="N",
        help="queries per test on contact_sheet.png",
    )
    add_image_partitions(p, conf, 48)


REQUEST = QueriesRequest


def job_of(request: QueriesRequest) -> Any:
    """The job of a checked request."""
    from disc21spark.queries.job import QueryJob

    return QueryJob.from_options(request)
