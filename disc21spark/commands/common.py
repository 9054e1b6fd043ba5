"""What every command's parser shares: the Spark run options, defaults from defaults.ini."""

from __future__ import annotations

import argparse
from typing import Any

from disc21spark.core import config


def add_run_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """The options every job shares: where Spark runs, how much it says."""
    profile = config.default(command, "profile")
    parser.add_argument(
        "--master",
        default=config.default(command, "master"),
        help="Spark master (default: spark-submit's, else the profile's)",
    )
    parser.add_argument(
        "--profile", default=profile, help=f"Spark profile in conf/spark/ (default {profile})"
    )
    parser.add_argument("--quiet", action="store_true", help="no phase log lines")
    parser.add_argument("--debug", action="store_true", help="full traces and Spark logs")


def add_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    conf: dict[str, Any],
    name: str,
    **kwargs: Any,
) -> argparse.Action:
    """``parser.add_argument(name, ...)`` with the command's default of that name
    (``--curve-points`` → ``conf["curve_points"]``)."""
    return parser.add_argument(name, default=conf[name.lstrip("-").replace("-", "_")], **kwargs)


def defaults(command: str) -> dict[str, str | None]:
    """A command's defaults.ini values by key, as argparse defaults: text that argparse
    converts with the option's own type (so the file and the command line read alike),
    None where the file leaves the value empty."""
    return {key: text or None for key, text in config.section(command).items()}
