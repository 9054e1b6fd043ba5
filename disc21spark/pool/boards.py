"""The public and the private board of a pool with ``--private-queries`` (``split.py``).

Whether a submission is valid is judged first, on the files as submitted, with the full
ground truth (``pool/job.py``). Then each board scores the valid submissions on its own
ground truth, their rows filtered to its queries (a broadcast semi-join, on the
distributed plan): each board's figures and intervals are those of the pool scored on
that ground truth and the filtered files alone. The private board, and the table of
rank changes between the boards, are written to ``--private-output`` only.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from disc21spark.matching import coverage
from disc21spark.matching.model import GroundTruth, Submission
from disc21spark.pool import report as pool_report
from disc21spark.pool.in_process import Board
from disc21spark.pool.split import PRIVATE, PUBLIC, Split

CHANGES = "rank_changes.csv"
CHANGE_COLUMNS = (
    "submission",
    "public_rank",
    "private_rank",
    "rank_change",
    "public_micro_ap",
    "private_micro_ap",
)

HIDDEN_REASON = (
    "invalid as submitted; the reason names a private query, so the private board gives it"
)
# (board's name, its ground truth, its query ids, the valid submissions) → metrics set
Scorer = Callable[[str, GroundTruth, list[str], list[Submission]], None]


def score_boards(
    gt: GroundTruth, split: Split, subs: list[Submission], todo: list[Submission], score: Scorer
) -> list[Submission]:
    """Each valid submission of ``todo`` scored on the public board (its metrics
    replaced), and a copy of every submission of ``subs`` scored on the private board
    (reused ones included: no private board is kept between runs); the copies are
    returned, in the order of ``subs``."""
    private = [
        replace(s, metrics=None, reused=False) if s.status == "ok" else replace(s, reused=False)
        for s in subs
    ]
    # the coverage warnings of each file as submitted (a reused one: its public board's):
    # a board's rows of its queries alone lose the rows a misnamed id sends elsewhere
    found = {s.name: s.metrics.warnings for s in subs if s.metrics is not None}
    hidden = set(split.query_ids(gt, PRIVATE))
    for s in subs:  # a reason naming a private query is told on the private board only
        # any private id within the text, even inside a longer word: better one reason
        # too many withheld than one private id published
        if s.status != "ok" and any(q in (s.reason or "") for q in hidden):
            s.reason = HIDDEN_REASON
    valid = [s for s in todo if s.status == "ok"]
    if valid:
        score(PUBLIC, split.board(gt, PUBLIC), split.query_ids(gt, PUBLIC), valid)
    scored = [s for s in private if s.status == "ok"]
    if scored:
        score(PRIVATE, split.board(gt, PRIVATE), sorted(hidden), scored)
    for board, shown in ((valid, lambda w: public_warnings(w, hidden)), (scored, tuple)):
        for s in board:
            if s.metrics is not None:  # still valid
                s.metrics = replace(s.metrics, warnings=shown(found.get(s.name, ())))
    return private


def public_warnings(found: tuple[str, ...], hidden: set[str]) -> tuple[str, ...]:
    """The warnings ``found`` the public board may show: a renaming warning whose example
    names a private query id loses its example; one naming such an id elsewhere is
    withheld (any id within the text, as a withheld reason)."""
    out = []
    for text in found:
        if any(q in text for q in hidden):
            text = coverage.EXAMPLE.sub("", text)
        if not any(q in text for q in hidden):
            out.append(text)
    return tuple(out)


def rank_changes(public: list[Submission], private: list[Submission]) -> list[dict]:
    """One row per submission valid on both boards, in the private board's order:
    its rank on each (1 = first) and the change (positive: up on the private board)."""
    ranks = {
        name: {s.name: i for i, s in enumerate(_scored(board), start=1)}
        for name, board in ((PUBLIC, public), (PRIVATE, private))
    }
    by_name = {s.name: s for s in public}
    rows = []
    for s in _scored(private):
        before, after = ranks[PUBLIC].get(s.name), ranks[PRIVATE][s.name]
        if before is None:
            continue
        rows.append(
            {
                "submission": s.name,
                "public_rank": before,
                "private_rank": after,
                "rank_change": before - after,
                "public_micro_ap": by_name[s.name].metrics.micro_ap,
                "private_micro_ap": s.metrics.micro_ap,
            }
        )
    return rows


def _scored(board: list[Submission]) -> list[Submission]:
    return [s for s in pool_report.ordered(board) if s.status == "ok"]


def write_private(folder: Path, public: list, private: list, run: dict) -> None:
    """The private board's files (as a pool's), and ``rank_changes.csv``."""
    pool_report.write(folder, private, run)
    with (folder / CHANGES).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CHANGE_COLUMNS)
        writer.writeheader()
        for row in rank_changes(public, private):
            writer.writerow({k: repr(v) if isinstance(v, float) else v for k, v in row.items()})


def ahead(job: Any, gt: GroundTruth, split: Split | None) -> list[tuple[str, Board]]:
    """The boards a pool scored in process takes from each file's one read (``job`` a
    ``PoolJob``): each board's name, ground truth and settings, as
    ``score_boards`` scores them; none without a split, or on Spark."""
    if split is None or job.choice.needs_spark or job.choice.plan != "per-file":
        return []
    return [
        (
            name,
            (
                split.board(gt, name),
                replace(job, groups=split.groups(job.groups, name)).settings(),
            ),
        )
        for name in (PUBLIC, PRIVATE)
    ]
