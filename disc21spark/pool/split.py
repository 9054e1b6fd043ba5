"""Public and private boards (``--private-queries``): the split of the ground truth's
queries, and each board's ground truth.

A challenge scores every submission on two disjoint query sets: the public board is
shown while it runs, the private one decides the winners. The file names the private
queries (a header ``query_id``, one query a line); every other query of the ground truth
is public. A board's ground truth is the full one restricted to its queries (their
positive pairs, their distractors), and its submissions are the files as submitted,
filtered to its queries; whether a submission is valid is judged on the file as
submitted (``pool/job.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from disc21spark.core.errors import InputError
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.stats.groups_file import QueryGroups, csv_rows, read_text, restricted

PUBLIC, PRIVATE = "public", "private"


@dataclass(frozen=True)
class Split:
    """``private``: bool (gt.n_queries,), the private queries of the ground truth;
    ``digest``: SHA-256 of the file's text (a previous board is reused only when it is
    the same)."""

    source: str
    private: np.ndarray
    digest: str

    def mask(self, name: str) -> np.ndarray:
        """bool (gt.n_queries,): the queries of the ``PUBLIC`` or ``PRIVATE`` board."""
        return self.private if name == PRIVATE else ~self.private

    def board(self, gt: GroundTruth, name: str) -> GroundTruth:
        """The ground truth of the ``PUBLIC`` or ``PRIVATE`` board."""
        ids = gt.query_ids[self.mask(name)]
        keep = np.isin(gt.positive_queries.astype(str), ids.astype(str))
        return GroundTruth(
            f"{gt.source} ({name} queries)",
            ids,
            gt.positive_queries[keep],
            gt.positive_references[keep],
        )

    def groups(self, groups: QueryGroups | None, name: str) -> QueryGroups | None:
        """The query groups of the ``PUBLIC`` or ``PRIVATE`` board (None: none)."""
        if groups is None:
            return None
        return restricted(groups, self.mask(name))

    def query_ids(self, gt: GroundTruth, name: str) -> list[str]:
        """The ids of the board's queries."""
        return [str(q) for q in gt.query_ids[self.mask(name)]]


def read_split(path: str, gt: GroundTruth, spark: object = None) -> Split:
    """The private-queries file at ``path`` checked against ``gt``. Raises InputError
    naming the file, the line and the reason: no ``query_id`` column, an empty id, a
    query unknown to ``gt`` or named twice, no query at all, every query private, a
    board left without a positive pair (its μAP would be 0 for every submission)."""
    text = read_text(path, spark)
    index = {str(q): i for i, q in enumerate(gt.query_ids)}
    first: dict[str, int] = {}
    for number, query in csv_rows(path, text, ("query_id",)):
        if query not in index:
            raise InputError(path, f"query {query!r} is not in the ground truth", f"line {number}")
        if query in first:
            reason = f"query {query!r} named twice (first on line {first[query]})"
            raise InputError(path, reason, f"line {number}")
        first[query] = number
    private = np.zeros(gt.n_queries, dtype=bool)
    private[[index[q] for q in first]] = True
    if private.all():
        raise InputError(
            path, f"names all {gt.n_queries:,} queries of the ground truth: no public query left"
        )
    _check_positives(path, gt, private)
    return Split(path, private, hashlib.sha256(text.encode("utf-8")).hexdigest())


def _check_positives(path: str, gt: GroundTruth, private: np.ndarray) -> None:
    """InputError when a board has no positive pair: as a ground truth without one is
    refused, since nothing on that board could be found."""
    with_match = np.isin(gt.query_ids.astype(str), gt.positive_queries.astype(str))
    for name, mask in ((PRIVATE, private), (PUBLIC, ~private)):
        if not (with_match & mask).any():
            other = PUBLIC if name == PRIVATE else PRIVATE
            reason = (
                f"the {name} board has no positive pair (every query with a match is "
                f"{other}): its μAP would be 0 for every submission"
            )
            raise InputError(path, reason)
