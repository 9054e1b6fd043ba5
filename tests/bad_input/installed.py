"""The installed command and jobs/*.py, as the user runs them."""

from __future__ import annotations

from tests.bad_input.common import CMD, PARQUET_TEXT, Case, evaluate, text, with_gt
from tests.bad_input.images import MAKE_QUERIES, library_with
from tests.bad_input.options import LIBRARY
from tests.bad_inputs import (
    CLEAN,
)

# ------------------------------------------------------------ the installed command
CASES: list[Case] = [
    Case(
        "cli-bad-line",
        CMD,
        "disc21spark evaluate (in process): a score that is text",
        evaluate(),
        2,
        "error: {d}/p.csv: line 1: score 'high' is not a number",
        with_gt(text("p.csv", "Q1,R1,high\n")),
        engines=("installed",),
    ),
    Case(
        "cli-debug",
        CMD,
        "the same with --debug: the trace, then the line",
        [*evaluate(), "--debug"],
        2,
        "error: {d}/p.csv: line 1: score 'high' is not a number",
        with_gt(text("p.csv", "Q1,R1,high\n")),
        engines=("installed",),
    ),
    Case(
        "cli-spark-parquet",
        CMD,
        "disc21spark evaluate --engine spark: a .parquet that is not "
        "Parquet (Spark's failure, no Java trace)",
        [*evaluate("{d}/p.parquet"), "--engine", "spark"],
        2,
        f"error: {{d}}/p.parquet: {PARQUET_TEXT}",
        with_gt(text("p.parquet", CLEAN)),
        engines=("installed",),
        preexisting=False,
    ),
    Case(
        "cli-usage",
        CMD,
        "jobs/evaluate.py without --ground-truth",
        ["evaluate", "--output", "{d}/o"],
        2,
        "error: the following arguments are required: --ground-truth",
        engines=("jobs",),
    ),
    Case(
        "cli-tests",
        CMD,
        "jobs/make_queries.py with an unknown test",
        [*MAKE_QUERIES, "--tests", "blurr:2"],
        2,
        "error: unknown test 'blurr:2' (known: …)",
        library_with(None),
        engines=("jobs",),
    ),
    Case(
        "cli-library-size",
        CMD,
        "jobs/make_library.py --size 0",
        [*LIBRARY, "--size", "0"],
        2,
        "error: size must be a positive integer, got 0",
        engines=("jobs",),
    ),
]
