"""disc21spark make-queries: an altered-image benchmark from an image library."""

from __future__ import annotations

import argparse
from typing import Any

from disc21spark.commands.common import add_option, add_run_arguments, defaults

NAME = "make-queries"
SUMMARY = "build an altered-image benchmark (queries, ground truth) from a library"
DESCRIPTION = """\
Build an altered-image benchmark from an image library (Howe 2000; DISC21-style edits).

disc21spark make-queries --images 'library/**/*.jpg' --output bench/ \\
    --tests crop:50,jumble:4x4,lowcon:80 --queries-per-test 500 --distractors 0.5 --seed 7
spark-submit jobs/make_queries.py ...    (the same from a checkout; no master given: local[*])
"""


def epilog() -> str:
    from disc21spark.queries.transforms import KINDS

    tests = "\n".join(f"  {k.usage:<12} {k.about}" for k in KINDS.values())
    sweep = "  NAME:A..B:S  a sweep: one test per value, e.g. crop:90..10:10, jumble:2x2..8x8:2"
    return f"tests (compose with +, separate with commas):\n{tests}\n{sweep}"


def add_arguments(p: argparse.ArgumentParser) -> None:
    conf = defaults(NAME)
    p.add_argument(
        "--images",
        nargs="+",
        required=True,
        help="image files: folders (searched recursively), globs, root/**/*.jpg",
    )
    p.add_argument("--output", required=True, help="the benchmark folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --output folder")
    add_option(p, conf, "--tests")
    add_option(p, conf, "--queries-per-test", type=int)
    add_option(p, conf, "--distractors", type=float,
               help="fraction of each test's queries whose original is held out of the references")  # fmt: skip
    add_option(p, conf, "--seed", type=int)
    add_option(p, conf, "--format", choices=("png", "jpeg"))
    add_option(p, conf, "--sheet-per-test", type=int, help="queries per test on contact_sheet.png")
    add_option(p, conf, "--partitions", type=int, help="tasks that alter images")
    add_run_arguments(p, NAME)


def check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.seed < 0 or (args.partitions is not None and args.partitions < 1):
        p.error("--seed must be ≥ 0 and --partitions ≥ 1")
    if args.sheet_per_test < 0:
        p.error("--sheet-per-test must be ≥ 0")


def build(args: argparse.Namespace) -> Any:
    from disc21spark.queries.job import QueryJob

    return QueryJob.from_args(args)
