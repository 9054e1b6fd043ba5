"""A frozen board and a rescored one beside it (``--freeze``, ``--compare-to``).

Challenges fix labels after launch. The official board must stay as it was: a run with
``--freeze`` publishes its folder with ``FROZEN.json`` inside, and no later run replaces
a folder holding it (``core/output.py``). A run with a corrected ground truth writes the
rescored board to another folder with ``--compare-to FROZEN``: ``changes.csv`` there
says, submission by submission, how the rank, the figures and the validity moved, and
the run record names both ground truths by their SHA-256.
"""

from __future__ import annotations

import csv
from pathlib import Path

from disc21spark.core import board_files, frozen
from disc21spark.pool import report as pool_report

CHANGES = "changes.csv"
FIGURES = ("micro_ap", "recall_at_p90", "recall_at_rank1", "recall_at_rank10")
COLUMNS = (
    "submission",
    "status_before",
    "status_after",
    "validity_changed",
    "rank_before",
    "rank_after",
    "rank_change",
    *(f"{f}_{when}" for f in FIGURES for when in ("before", "after", "delta")),
)


def read_board(path: str, spark: object = None) -> dict:
    """leaderboard.json of the board at ``path`` (any file system ``core/fs`` reads):
    ``{"run": ..., "submissions": [...]}``, checked (``core/board_files``). InputError
    when there is none or it is not one a pool run wrote."""
    return board_files.read(path, f"--compare-to {path}", spark)


def compared(board: dict, path: str) -> dict:
    """What the run record keeps of the board compared to."""
    run = board["run"]
    return {
        "compared_to": path,
        "compared_ground_truth_sha256": run.get("ground_truth_sha256"),
        "compared_frozen": bool(run.get("frozen")),
    }


def changes(before: dict, after: list) -> list[dict]:
    """One row per submission of either board (``before`` a leaderboard.json, ``after``
    this run's submissions), in this run's order, those gone from it after."""
    old = {r["submission"]: r for r in before["submissions"]}
    new = {r["submission"]: r for r in pool_report.records(after)}
    names = list(new) + [n for n in old if n not in new]
    return [_row(name, old.get(name, {}), new.get(name, {})) for name in names]


def _row(name: str, old: dict, new: dict) -> dict:
    row = {
        "submission": name,
        "status_before": old.get("status", "absent"),
        "status_after": new.get("status", "absent"),
        "rank_before": old.get("rank"),
        "rank_after": new.get("rank"),
    }
    row["validity_changed"] = (row["status_before"] == "ok") != (row["status_after"] == "ok")
    both = row["rank_before"] is not None and row["rank_after"] is not None
    row["rank_change"] = row["rank_before"] - row["rank_after"] if both else None
    for f in FIGURES:
        a, b = old.get(f), new.get(f)
        row[f"{f}_before"], row[f"{f}_after"] = a, b
        row[f"{f}_delta"] = b - a if a is not None and b is not None else None
    return row


def write_changes(folder: Path, rows: list[dict]) -> None:
    """changes.csv: floats as Python prints them, a missing value empty."""
    with (folder / CHANGES).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else _cell(v) for k, v in row.items()})


def _cell(value: object) -> object:
    return repr(value) if isinstance(value, float) else value


def freeze(folder: Path, run: dict, submissions: int) -> None:
    """FROZEN.json in the staging folder: the board appears frozen, or not at all."""
    frozen.write(folder, frozen.document(run, submissions))
