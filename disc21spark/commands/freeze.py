"""disc21spark freeze: a published board copied, frozen, to a new folder."""

from __future__ import annotations

import argparse
from typing import Any

from disc21spark.commands.common import add_run_arguments
from disc21spark.commands.requests import FreezeRequest

NAME = "freeze"
SUMMARY = "copy a published board, frozen, to a new folder no run replaces"
DESCRIPTION = """\
Copy a board a pool run published (a folder with leaderboard.json) to a new folder, with
FROZEN.json inside: no later run replaces that folder, not even with --overwrite. For the
official board of a challenge while labels may still change, and for the private board
revealed at the end. No Spark is started.

disc21spark freeze --board runs/latest --output boards/official
disc21spark freeze --board private/2026-11-30T000000Z --output boards/final
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--board",
        required=True,
        metavar="DIR",
        help="the published board: a folder a pool run wrote (leaderboard.json)",
    )
    p.add_argument(
        "--output",
        required=True,
        metavar="DIR",
        help="the new folder of the frozen copy (never an existing one)",
    )
    add_run_arguments(p, NAME)


REQUEST = FreezeRequest


def job_of(request: FreezeRequest) -> Any:
    """The job of a checked request."""
    from disc21spark.pool.freeze_job import FreezeJob

    return FreezeJob.from_options(request)
