"""What every job does around its one call: defaults, logging, errors as one line, exit codes."""

from __future__ import annotations

import configparser
import logging
import sys
import traceback
from collections.abc import Callable

from disc21spark.core.errors import InputError, OutputError
from disc21spark.core.session import CONF_DIR

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT = 0, 1, 2


def defaults(section: str) -> dict[str, str]:
    """Defaults of conf/evaluate.ini for one job."""
    parser = configparser.ConfigParser()
    parser.read(CONF_DIR / "evaluate.ini")
    return dict(parser[section]) if parser.has_section(section) else {}


def add_run_arguments(parser, profile: str) -> None:
    """The options every job shares: where Spark runs, how much it says."""
    parser.add_argument(
        "--master", default=None, help="Spark master (default: spark-submit's, else the profile's)"
    )
    parser.add_argument(
        "--profile", default=profile, help=f"Spark profile in conf/spark/ (default {profile})"
    )
    parser.add_argument("--quiet", action="store_true", help="no phase log lines")
    parser.add_argument("--debug", action="store_true", help="full traces and Spark logs")


def setup_logging(quiet: bool = False) -> None:
    # a handler of our own: under spark-submit the root logger is already configured
    logger = logging.getLogger("disc21spark")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s disc21spark %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False


def java_is_usable() -> str | None:
    """None when a Java 17+ runtime is found, else a sentence saying what is missing."""
    import os
    import re
    import shutil
    import subprocess

    java = (
        os.path.join(os.environ["JAVA_HOME"], "bin", "java")
        if os.environ.get("JAVA_HOME")
        else shutil.which("java")
    )
    if not java or not os.path.exists(java):
        return (
            "Java 17 is required by Spark and was not found (install OpenJDK 17 or set JAVA_HOME)"
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.SubprocessError) as exc:
        return f"Java at {java} does not run ({exc})"
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    major = int(found.group(1)) if found else 0
    if major == 1 and found.group(2):  # "1.8" style
        major = int(found.group(2))
    if major < 17:
        return f"Java 17 or newer is required by Spark; {java} is version {major or 'unknown'}"
    return None


def run_job(call: Callable[[], object], debug: bool = False) -> int:
    """Run a job's one call; a user error becomes one line on stderr and exit code 2."""
    problem = java_is_usable()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INPUT
    try:
        call()
    except (InputError, OutputError, ValueError) as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("error: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: still one line, the trace on request
        if debug:
            traceback.print_exc()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(
            f"internal error: {type(exc).__name__}: {first} (rerun with --debug for the trace)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return EXIT_OK
