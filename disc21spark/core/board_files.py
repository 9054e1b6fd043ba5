"""A published board's files read and checked in one place: ``--previous``,
``--compare-to`` and ``disc21spark freeze`` take a board folder an organiser names, and
a file in it that is not what a pool run wrote is one line (InputError naming the file
and the reason) before anything is written.

A board says which it is in its ``run`` block: ``board`` is ``unsplit`` (a pool without
``--private-queries``; a board written before this field has none), ``public`` or
``private``; ``ground_truth_sha256`` names its ground truth by content.

Nothing here imports numpy at load time: a scheduler's environment freezes boards
(``core/frozen.py``); the replicates' check imports it when called.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from disc21spark.core import fs
from disc21spark.core.errors import InputError

BOARD = "leaderboard.json"
UNSPLIT, PUBLIC, PRIVATE = "unsplit", "public", "private"
KINDS = (UNSPLIT, PUBLIC, PRIVATE)
# what a pool run publishes in every board folder (``pool/report.py``, ``core/output.py``)
PARTS = (fs.SUCCESS, "run.json", BOARD, "leaderboard.csv", "pr_curves")
# a row's fields that are not numbers, by their type
BOOLS = ("reused", "tie_sensitive")
COUNTS = (
    "n_predictions",
    "n_positives",
    "n_true_positives",
    "n_queries",
    "n_queries_with_predictions",
    "n_unknown_query_predictions",
)
# the figures a scored row always has (--previous rebuilds its metrics from them)
SCORED = ("micro_ap", "recall_at_rank1", "recall_at_rank10", *COUNTS)
SHA256 = re.compile(r"[0-9a-f]{64}")


def kind(run: dict) -> str:
    """Which board a ``run`` block describes: ``unsplit``, ``public`` or ``private``."""
    return run.get("board") or UNSPLIT


def parse(text: str, label: str) -> dict:
    """A leaderboard.json's content, ``{"run": ..., "submissions": [...]}``, checked
    field by field. Raises InputError naming ``label`` and what is wrong."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise _not_ours(label, f"JSONDecodeError: {exc}") from None
    except RecursionError:  # arrays in arrays past Python's stack: not a board either
        raise _not_ours(label, "nested too deeply to be a leaderboard") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("run"), dict):
        raise _not_ours(label, "no run block")
    if not isinstance(doc.get("submissions"), list) or not doc["submissions"]:
        raise _not_ours(label, "no submissions")
    _check_run(doc["run"], label)
    for i, row in enumerate(doc["submissions"]):
        problem = _row_problem(row)
        if problem is not None:
            raise _not_ours(label, f"submission {i + 1}: {problem}")
    return doc


def _not_ours(label: str, why: str) -> InputError:
    return InputError(label, f"not a leaderboard this tool wrote ({why})")


def _check_run(run: dict, label: str) -> None:
    digest = run.get("ground_truth_sha256")
    if not isinstance(digest, str) or not SHA256.fullmatch(digest):
        raise _not_ours(label, "the run block names no ground_truth_sha256")
    if kind(run) not in KINDS:
        raise _not_ours(label, f"board {run.get('board')!r} is none of {', '.join(KINDS)}")


def _row_problem(row: Any) -> str | None:
    """What is wrong with one row of ``submissions`` (None: nothing)."""
    if not isinstance(row, dict):
        return "not an object"
    if not isinstance(row.get("submission"), str) or not row["submission"]:
        return "no submission name"
    if row.get("status") not in ("ok", "invalid"):
        return f"status {row.get('status')!r} is neither ok nor invalid"
    for key, value in row.items():
        problem = _field_problem(key, value)
        if problem is not None:
            return f"{key} {problem}"
    if row["status"] == "ok":
        missing = [k for k in (*SCORED, "rank") if row.get(k) is None]
        if missing:
            return f"scored without {missing[0]}"
    return None


def _field_problem(key: str, value: Any) -> str | None:
    if key in ("submission", "status"):
        return None
    if key in ("reason", "checksum"):
        return None if value is None or isinstance(value, str) else "is not text"
    if key in BOOLS:
        return None if value is None or isinstance(value, bool) else "is not true or false"
    if key == "warnings":
        ok = isinstance(value, list) and all(isinstance(w, str) for w in value)
        return None if ok or value is None else "is not a list of text"
    if key == "groups":
        return None if value is None or isinstance(value, dict) else "is not an object"
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"is {value!r}, not a number"
    if (key in COUNTS or key == "rank") and (not isinstance(value, int) or value < 0):
        return f"is {value!r}, not a count"
    return None


def read(path: str, label: str, spark: Any = None) -> dict:
    """leaderboard.json of the board at ``path`` (any file system ``core/fs`` reads),
    checked (``parse``). Raises InputError naming ``label``."""
    where = f"{path.rstrip('/')}/{BOARD}"
    if not fs.exists(where, spark):
        raise InputError(label, f"no {BOARD} there (not a board)")
    try:  # unreadable or not UTF-8: the same line as a file that is not JSON
        text = fs.read_text(where, spark)
    except (OSError, ValueError) as exc:
        raise _not_ours(label, f"{type(exc).__name__}: {exc}") from None
    return parse(text, label)


def read_whole(folder: Path, named: str) -> dict:
    """A local board folder that a pool run published whole (every part of ``PARTS``),
    its leaderboard.json checked. Raises InputError naming ``named`` (as given)."""
    if not folder.is_dir():
        raise InputError(named, "no such folder")
    if not (folder / BOARD).is_file():
        raise InputError(named, f"no {BOARD} there: not a board a pool run published")
    missing = [p for p in PARTS if not (folder / p).exists()]
    if missing:
        reason = f"no {', '.join(missing)} there: not a board a pool run published whole"
        raise InputError(named, reason)
    label = os.path.join(named, BOARD)
    try:
        text = (folder / BOARD).read_text()
    except (OSError, ValueError) as exc:
        raise _not_ours(label, f"{type(exc).__name__}: {exc}") from None
    return parse(text, label)


def digest(folder: Path, leave_out: tuple[str, ...] = ()) -> str:
    """SHA-256 of a local folder's files (their relative paths and contents, in order),
    but for ``leave_out`` and hidden names (a lock file beside the work)."""
    found = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.name not in leave_out and not p.name.startswith(".")
    )
    h = hashlib.sha256()
    for path in found:
        h.update(f"{path.relative_to(folder).as_posix()}\0{fs.sha256(str(path))}\n".encode())
    return h.hexdigest()


def replicates(path: Path, label: str, shape: tuple[int, int]) -> Any:
    """resamples/<name>.npy: a float64 array of ``shape`` (statistics, resamples).
    Raises InputError naming ``label`` when it is not one."""
    import numpy as np

    try:
        found = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(label, f"not replicates this tool wrote ({exc})") from None
    if found.dtype != np.float64 or found.shape != shape:
        reason = (
            f"not replicates this tool wrote ({found.dtype} {found.shape}; float64 {shape} "
            "expected)"
        )
        raise InputError(label, reason)
    return found
