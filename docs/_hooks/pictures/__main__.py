"""``python -m pictures FOLDER``: make every picture of the docs into FOLDER.

FOLDER is emptied first and filled only when every picture is made, so that it never
holds a picture of an older build: a failure leaves it missing, and the docs build,
which checks every linked picture against it, fails naming the page. Exit 0 done, 1 a
picture could not be made (one ``pictures: error:`` line, then what the step printed).
The commands run in a throwaway folder that links the checkout's ``data/``, so their
outputs hold the same relative paths as the tutorial's (``demo/...``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# this checkout's package and tests/chromium.py, whatever the virtualenv has installed
sys.path.insert(0, str(ROOT))

from pictures import FROM_OUTPUTS, concepts, outputs, screenshot  # noqa: E402

# as the Makefile sets them for every Spark command: the workers run this interpreter,
# Spark stays on the loopback, and log4j reads the package's quiet settings. The JVM
# compiles with C1 only and collects with one thread, as the test suite's do: its jobs
# here last seconds, and C2's compiler threads cost more CPU than they save (a third of
# the build's CPU on this 2-core machine); no output depends on it
SPARK_ENVIRONMENT = {
    "PYSPARK_PYTHON": sys.executable,
    "PYSPARK_DRIVER_PYTHON": sys.executable,
    "SPARK_LOCAL_IP": "127.0.0.1",
    "SPARK_CONF_DIR": str(ROOT / "disc21spark" / "conf"),
    "SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


def make(folder: Path) -> None:
    """Every picture into ``folder`` (created), run from the current folder.

    Raises:
        outputs.StepFailed: a command failed or did not write its output.
        screenshot.NoChromium: no Chromium for the leaderboard's screenshot.
        AssertionError: docs/concepts.md's hand count and the code disagree.
    """
    folder.mkdir(parents=True)
    concepts.draw(folder / "concepts_pr_curve.png")
    for name, step in FROM_OUTPUTS.items():
        made = outputs.timed(name, step)
        if made.suffix == ".html":
            screenshot.leaderboard(made, folder / name)
        else:
            shutil.copyfile(made, folder / name)


def check_tools() -> str | None:
    """What is missing to make the pictures (Java, Chromium), before any work; or None."""
    from disc21spark.core.runner import java_is_usable
    from tests.chromium import chromium_path

    if chromium_path() is None:
        return screenshot.NO_CHROMIUM
    problem = java_is_usable()
    return f"the pool, descriptor and image pictures run on Spark: {problem}" if problem else None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m pictures FOLDER", file=sys.stderr)
        return 2
    folder = Path(argv[0]).resolve()
    shutil.rmtree(folder, ignore_errors=True)
    missing = check_tools()
    if missing:
        print(f"pictures: error: {missing}", file=sys.stderr)
        return 1
    for key, value in SPARK_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    started = time.monotonic()
    staging = Path(tempfile.mkdtemp(prefix="disc21spark-pictures-"))
    work = staging / "work"
    work.mkdir()
    (work / "data").symlink_to(ROOT / "data")
    here = os.getcwd()
    os.chdir(work)
    try:
        make(staging / "made")
        shutil.move(staging / "made", folder)
    except (outputs.StepFailed, screenshot.NoChromium, AssertionError, TimeoutError) as exc:
        print(f"pictures: error: {exc}", file=sys.stderr)
        return 1
    finally:
        os.chdir(here)
        _stop_spark()
        shutil.rmtree(staging, ignore_errors=True)
    took = time.monotonic() - started
    print(f"pictures: {len(os.listdir(folder))} made in {took:.0f} s → {folder}", file=sys.stderr)
    return 0


def _stop_spark() -> None:
    """Stop the session the commands started, if they did, and wait for its JVM to end
    (the package's own shutdown: the JVM's stdin closed, then its process group)."""
    from disc21spark.core import gateway

    gateway.stop_all()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
