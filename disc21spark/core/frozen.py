"""Frozen boards: a board an organiser froze, which no run replaces.

Two ways to freeze: ``evaluate --freeze`` publishes a pool's board with ``FROZEN.json``
inside; ``freeze_board`` copies a board already published (the latest public board, or at
the end the private one: the reveal) to a folder of its own, with ``FROZEN.json``. No
run's output replaces a folder holding that file (``core/output.py``), not even with
``--overwrite``.

Nothing here imports numpy, pandas or PySpark: a scheduler's environment calls it
(``scheduled.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from disc21spark.core import board_files
from disc21spark.core.errors import OutputError

FROZEN = "FROZEN.json"


def frozen_error(path: str) -> OutputError:
    return OutputError(
        f"{path}: a frozen board, which no run replaces (not even with --overwrite); write "
        f"the rescored board beside it: --output ANOTHER --compare-to {path}"
    )


def refuse_frozen(path: str | os.PathLike, replaced: bool = True) -> None:
    """OutputError when writing the local ``path`` would write inside or over a frozen
    board: a folder above it holds ``FROZEN.json``, or (``replaced``: the run would
    replace ``path``) ``path`` is a frozen board or holds one anywhere below it. The one
    check of every output (``core/keep.py`` before a run, ``core/output.py`` at publish,
    ``freeze_board``)."""
    given = os.fspath(path)
    here = Path(given).resolve()
    for folder in here.parents:
        if (folder / FROZEN).is_file():
            raise OutputError(
                f"{given}: inside the frozen board {folder}, which no run writes in (not "
                "even with --overwrite)"
            )
    if not replaced or not here.is_dir():
        return
    if (here / FROZEN).is_file():
        raise frozen_error(given)
    for top, _, names in os.walk(here):  # symlinked folders are not followed: not replaced
        if FROZEN in names:
            raise OutputError(
                f"{given}: holds the frozen board {top}, which no run replaces (not even "
                "with --overwrite)"
            )


def document(run: dict, submissions: int, source: str | None = None) -> dict:
    """FROZEN.json's content: when, on which ground truth (its SHA-256), how many
    submissions, which board (public or private, when the pool had a split) and, for a
    copy, the folder it was copied from."""
    doc = {
        "frozen_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "ground_truth_sha256": run.get("ground_truth_sha256"),
        "submissions": submissions,
    }
    if run.get("board"):
        doc["board"] = run["board"]
    if source is not None:
        doc["copied_from"] = source
    return doc


def write(folder: Path, doc: dict) -> None:
    (folder / FROZEN).write_text(json.dumps(doc, indent=2) + "\n")


def freeze_board(board: str | os.PathLike, to: str | os.PathLike) -> Path:
    """Copy the published board in the local folder ``board`` to the new folder ``to``,
    frozen. The copy appears whole or not at all (staged beside ``to``, then renamed).
    Freezing the same board, unchanged, to the same folder again returns at once (a
    retried task): FROZEN.json keeps the board's digest (``board_sha256``).

    Returns ``to`` as a Path. Raises InputError when ``board`` is not a board a pool run
    published whole (``board_files.read_whole``), OutputError when ``to`` exists and is
    not this board's frozen copy as it is now, or cannot be written."""
    # the board by its real folder (``runs/latest`` is a symlink that moves on); the
    # messages name both as given
    source, target, named = Path(board).resolve(), Path(to).absolute(), os.fspath(to)
    run = board_files.read_whole(source, os.fspath(board))
    state = board_files.digest(source, leave_out=(FROZEN,))
    if target.exists() or target.is_symlink():
        copied = _frozen_doc(target)
        if copied.get("copied_from") != str(source):
            raise OutputError(f"{named}: exists (a frozen board is copied to a new folder)")
        if copied.get("board_sha256") != state:
            raise OutputError(
                f"{named}: exists and holds a frozen copy of an earlier state of "
                f"{os.fspath(board)} (freeze it again to a new folder)"
            )
        return target
    if not target.parent.is_dir():
        raise OutputError(f"{target.parent}: parent folder does not exist")
    refuse_frozen(named, replaced=False)  # a copy inside a frozen board changes that board
    if target == source or source in target.resolve().parents:
        raise OutputError(f"{named}: inside the board it would copy")
    doc = {**document(run["run"], len(run["submissions"]), str(source)), "board_sha256": state}
    _copy(source, target, doc, named)
    return target


def _copy(source: Path, target: Path, doc: dict, named: str) -> None:
    """``source`` copied to ``target`` with FROZEN.json ``doc``, through a staging folder."""
    staging = target.with_name(f".{target.name}.freezing-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir()
    except OSError as exc:  # the words of every command's output check (core/output.py)
        reason = f"cannot write the output folder here ({exc.strerror or exc})"
        raise OutputError(f"{target.parent}: {reason}") from None
    try:
        shutil.copytree(source, staging, symlinks=True, dirs_exist_ok=True)
        (staging / FROZEN).unlink(missing_ok=True)  # a frozen board copied: frozen anew
        write(staging, doc)
        os.replace(staging, target)
    except OSError as exc:
        raise OutputError(f"{named}: cannot write the frozen copy ({exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _frozen_doc(folder: Path) -> dict:
    """FROZEN.json of ``folder`` ({} when there is none or it is not an object)."""
    try:
        doc = json.loads((folder / FROZEN).read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}
