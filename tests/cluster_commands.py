"""Several ``disc21spark`` commands in one Spark application, for test_cluster.py:

    spark-submit --master spark://… tests/cluster_commands.py RESULTS -- ARGV -- ARGV …

Each ARGV is a command line of ``jobs/*.py`` (``evaluate --ground-truth …``), run by the
same ``disc21spark.commands.main`` those entry points call; the runner's ``getOrCreate``
finds this application's session, so the cluster starts its executors once instead of
once per command (a cluster application costs about 30 s here before its first task).
RESULTS gets one JSON object per command: its exit code and what it printed.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from disc21spark.commands import main  # noqa: E402


def split(argv: list[str]) -> list[list[str]]:
    commands: list[list[str]] = []
    for arg in argv:
        if arg == "--":
            commands.append([])
        else:
            commands[-1].append(arg)
    return commands


def run(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    return {"argv": argv, "code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


if __name__ == "__main__":
    results = [run(argv) for argv in split(sys.argv[2:])]
    Path(sys.argv[1]).write_text(json.dumps(results, indent=1))
