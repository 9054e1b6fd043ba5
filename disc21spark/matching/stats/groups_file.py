"""The query-groups file of ``--query-groups``: which group each query belongs to.

A CSV with a header naming the columns ``query_id`` and ``group`` (in any order; other
columns are ignored), one row per query, one group per query. A query the file does not
name belongs to no group: its pairs and positives count in every group's figures
(``groups.py``). Blank lines are skipped; ids and group names are stripped of spaces.
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass

import numpy as np

from disc21spark.core import fs
from disc21spark.core.errors import InputError, column_list, first_line
from disc21spark.matching.model import GroundTruth

COLUMNS = ("query_id", "group")


@dataclass(frozen=True)
class QueryGroups:
    """The groups of one file, resolved against one ground truth.

    ``names``: the group names, sorted; ``codes``: int32 (gt.n_queries,), the code of each
    ground-truth query in ``names`` order, ``len(names)`` for a query in no group;
    ``sizes``: int64 (len(names),), the queries of each group; ``digest``: SHA-256 of the
    file's text (a previous leaderboard's groups are reused only when it is the same)."""

    source: str
    names: tuple[str, ...]
    codes: np.ndarray
    sizes: np.ndarray
    digest: str

    @property
    def none(self) -> int:
        """The code of a query in no group (and of a query unknown to the ground truth)."""
        return len(self.names)

    def settings(self) -> dict:
        """What a previous leaderboard must share for its group figures to be reused."""
        return {"query_groups": self.source, "query_groups_sha256": self.digest}


def read_query_groups(path: str, gt: GroundTruth, spark: object = None) -> QueryGroups:
    """The groups file at ``path`` (any file system ``core/fs`` reads) checked against
    ``gt``. Raises InputError naming the file, the line and the reason: no header with
    both columns, an empty id or group, a query unknown to ``gt``, a query named twice,
    no row at all."""
    text = read_text(path, spark)
    rows = csv_rows(path, text, COLUMNS)
    index = {str(q): i for i, q in enumerate(gt.query_ids)}
    named: dict[str, str] = {}
    first_line_of: dict[str, int] = {}
    for number, query, group in rows:
        if query not in index:
            raise InputError(path, f"query {query!r} is not in the ground truth", f"line {number}")
        if query in named:
            where = f"line {number}"
            raise InputError(
                path, f"query {query!r} named twice (first on line {first_line_of[query]})", where
            )
        named[query], first_line_of[query] = group, number
    names = tuple(sorted(set(named.values())))
    code_of = {name: c for c, name in enumerate(names)}
    codes = np.full(gt.n_queries, len(names), dtype=np.int32)
    for query, group in named.items():
        codes[index[query]] = code_of[group]
    sizes = np.bincount(codes, minlength=len(names) + 1)[: len(names)].astype(np.int64)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return QueryGroups(path, names, codes, sizes, digest)


def restricted(groups: QueryGroups, keep: np.ndarray) -> QueryGroups:
    """``groups`` as read against a ground truth of the queries ``keep`` (bool over the
    ground truth's queries) alone: the same file, the groups left with no query gone."""
    codes = groups.codes[keep]
    sizes = np.bincount(codes, minlength=groups.none + 1)[: groups.none]
    present = np.flatnonzero(sizes > 0)
    recode = np.full(groups.none + 1, len(present), dtype=np.int32)
    recode[present] = np.arange(len(present), dtype=np.int32)
    names = tuple(groups.names[i] for i in present)
    return QueryGroups(
        groups.source, names, recode[codes], sizes[present].astype(np.int64), groups.digest
    )


def read_text(path: str, spark: object = None) -> str:
    """The text of a small CSV file of ours (any file system ``core/fs`` reads), a
    leading byte-order mark dropped (spreadsheets write one); InputError when it cannot
    be read or is not UTF-8."""
    try:
        return fs.read_text(path, spark).removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise InputError(path, "cannot be read (not UTF-8 text)") from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({first_line(exc)})") from None


def csv_rows(path: str, text: str, wanted: tuple[str, ...]) -> list[tuple]:
    """(line number, *the ``wanted`` columns' values) of every data row of a small CSV
    with a header naming them (other columns ignored, blank lines skipped, values
    stripped); InputError naming the line for a bad one."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        header = ",".join(wanted)
        raise InputError(path, f"empty (a header {header} and one row per query expected)")
    number, header = lines[0]
    columns = _fields(path, number, header)
    missing = [c for c in wanted if c not in columns]
    if missing:
        has = column_list(columns)
        raise InputError(path, f"missing column {missing[0]!r} (has: {has})", f"line {number}")
    at = [columns.index(c) for c in wanted]
    out = []
    for number, line in lines[1:]:
        fields = _fields(path, number, line)
        if len(fields) != len(columns):
            raise InputError(
                path, f"{len(fields)} fields, the header has {len(columns)}", f"line {number}"
            )
        values = tuple(fields[i] for i in at)
        empty = [c for c, v in zip(wanted, values) if not v]
        if empty:
            raise InputError(path, f"empty {empty[0]}", f"line {number}")
        out.append((number, *values))
    if not out:
        raise InputError(path, "no row after the header (one row per query expected)")
    return out


def _fields(path: str, number: int, line: str) -> list[str]:
    """The stripped fields of one CSV line; InputError naming the line when Python's
    csv refuses it (a field over its limit of 131,072 characters)."""
    try:
        return [f.strip() for f in next(csv.reader(io.StringIO(line)))]
    except csv.Error as exc:
        limit = csv.field_size_limit()
        reason = (
            f"a field longer than {limit:,} characters (an id or a group name expected)"
            if "field limit" in str(exc)
            else f"not a CSV line ({exc})"
        )
        raise InputError(path, reason, f"line {number}") from None
