"""Every input of a run resolved once, for the decision module (``engine.py``) alone.

``engine.settle`` calls ``inputs_of`` once a run, with the files Spark listed (or the
one local file), and the ``Choice`` carries the result; the stages read these plain
values instead of asking ``core`` again where a path lives or how it is read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from disc21spark.core.paths import codec, detect_format, display_path, is_plain, is_uri

# the name endings of a file whose size bounds its rows (``ResolvedInput.rows_at_most``):
# any other may be one a session's Hadoop codecs decompress
PLAIN_TEXT = ("", ".csv", ".txt")
# the inputs besides the predictions, by the name a request and a job both give them:
# (role in the record, the attribute holding the path, the one holding its format)
OTHERS = (
    ("ground_truth", "ground_truth", "ground_truth_format"),
    ("query_groups", "query_groups", None),
    ("split", "private_queries", None),
)


@dataclass(frozen=True)
class ResolvedInput:
    """One input file: ``given`` the path as given, ``local`` the plain local file it
    names (None: another file system, a glob, a folder, not there), ``remote`` a URI of
    another file system, ``format`` csv or parquet as Spark reads it, ``codec`` the
    Hadoop codec suffix (``.gz``) or None, ``size`` bytes (None: not known), and
    ``arrow_reads`` whether Arrow reads it as Spark does (None: not asked), ``unread``
    for another local file why this process's reader does not read its name as Spark
    does (None: it does, or not a local file)."""

    given: str
    local: str | None
    remote: bool
    format: str
    codec: str | None
    size: int | None = None
    arrow_reads: bool | None = None
    unread: str | None = field(default=None, compare=False)

    @property
    def rows_at_most(self) -> int | None:
        """The most rows this file can hold, from its size as listed: a plain CSV file's
        row is a line with a character that is not white space, and its line end, so at
        most one row per 2 bytes (the last line may have no end). None when the size
        does not tell: Parquet, a name that does not say plain text (a codec, or one a
        session may add, such as ``.lzo``), a size not known or negative (some file
        systems list -1). A file that grows between listing and reading may pass it."""
        plain = PurePosixPath(self.given.lower().rstrip("/")).suffix in PLAIN_TEXT
        if self.format != "csv" or self.codec is not None or not plain:
            return None
        return (self.size + 1) // 2 if self.size is not None and self.size >= 0 else None

    def record(self) -> dict[str, Any]:
        """The run record's entry (metrics.json's ``run.resolved``)."""
        return {
            "path": self.given,
            "local": self.local is not None,
            "remote": self.remote,
            "format": self.format,
            "codec": self.codec,
            "bytes": self.size,
            "arrow_reads_as_spark": self.arrow_reads,
        }


@dataclass(frozen=True)
class RunInputs:
    """The resolved inputs of one run: each predictions file (as listed: a pool's files,
    a dataset's parts; empty for a table in memory), the ground truth, the query-groups
    and split files (None when not given), and the output folder as given."""

    predictions: tuple[ResolvedInput, ...] = ()
    ground_truth: ResolvedInput | None = None
    query_groups: ResolvedInput | None = None
    split: ResolvedInput | None = None
    output: str | None = None

    def of(self, path: str) -> ResolvedInput:
        """The predictions file ``path`` (as listed) resolved; KeyError for another."""
        return next(p for p in self.predictions if p.given == path)

    def rows_at_most_of_one(self, paths: Sequence[str]) -> int | None:
        """The most rows any one of the predictions files ``paths`` (as listed) can hold
        (``ResolvedInput.rows_at_most``); None when one is no file listed here (a table's
        submission) or its size does not tell."""
        listed = {p.given: p.rows_at_most for p in self.predictions}
        bounds = [listed.get(path) for path in paths]
        return None if not bounds or None in bounds else max(bounds)

    def record(self) -> dict[str, Any]:
        """Each input's entry, by role (``ResolvedInput.record``); ``predictions`` a list."""
        out: dict[str, Any] = {"predictions": [p.record() for p in self.predictions]}
        for role, _, _ in OTHERS:
            one = getattr(self, role)
            if one is not None:
                out[role] = one.record()
        if self.split is not None:  # its size would tell how many queries it holds
            del out["split"]["bytes"]
        out["output"] = self.output
        return out

    def lines(self) -> list[str]:
        """The formats read, as ``--explain`` prints them."""
        named = [("predictions", p) for p in self.predictions]
        named += [(role, getattr(self, role)) for role, _, _ in OTHERS]
        return [
            f"reads: {role} {display_path(one.given)} as {one.format}"
            + (f" ({one.codec[1:]})" if one.codec else "")
            for role, one in named
            if one is not None
        ]


def rows_at_most(files: Sequence[ResolvedInput]) -> int | None:
    """The most rows ``files`` (one submission's, as listed) can hold together, from
    their sizes (``ResolvedInput.rows_at_most``); None without files, or when one
    file's size does not tell."""
    bounds = [f.rows_at_most for f in files]
    return sum(bounds) if bounds and None not in bounds else None


def resolve(
    path: str, fmt: str = "auto", size: int | None = None, submission: bool = False
) -> ResolvedInput:
    """``path`` resolved: where it lives, its format as Spark reads it (``fmt`` as asked:
    auto, csv, parquet), its codec and size; ``submission``: also whether Arrow reads it
    as Spark does (its name, and a local Parquet file's schema: ``core.formats``)."""
    # here, not above: a command's parser and --help need the standard library alone
    from disc21spark.core import formats

    plain = formats.local_path(path)
    if size is None and plain is not None:
        size = os.path.getsize(plain)
    arrow = formats.format_problem(path, fmt, plain) is None if submission else None
    unread = formats.format_problem(plain, fmt) if plain and not submission else None
    remote = is_uri(path) and not path.startswith("file:")
    found = detect_format(path, fmt)
    return ResolvedInput(path, plain, remote, found, codec(path), size, arrow, unread)


def inputs_of(files: Sequence[tuple[str, int | None]], fmt: str, given: Any = None) -> RunInputs:
    """The run's inputs: ``files`` the predictions files with their sizes (as listed),
    read in ``fmt``; ``given`` the request or job that names the other inputs (its
    ``ground_truth``, ``ground_truth_format``, ``query_groups``, ``private_queries``,
    ``output``; None: none known)."""
    predictions = tuple(resolve(f, fmt, size, submission=True) for f, size in files)
    others = {}
    for role, name, fmt_name in OTHERS:
        path = getattr(given, name, None)
        if isinstance(path, (str, os.PathLike)):
            asked = getattr(given, fmt_name, "auto") if fmt_name else "auto"
            others[role] = resolve(os.fspath(path), asked)
    output = getattr(given, "output", None)
    _check_outputs(given)
    return RunInputs(predictions, **others, output=output if isinstance(output, str) else None)


def _check_outputs(given: Any) -> None:
    """The outputs ``given`` names checked before any work (``core.output``): the one
    check of a job built by hand; a command's folders the runner claimed pass at once,
    and --explain writes nothing. OutputError when one could not be published."""
    from disc21spark.core.output import check_writable

    if getattr(given, "explain", False):
        return
    for name in ("output", "private_output"):
        folder = getattr(given, name, None)
        if isinstance(folder, str) and folder:
            check_writable(folder, getattr(given, "overwrite", False))


def not_local_around(
    ground_truth: str | None, output: str | None, side: Sequence[str | None] = ()
) -> str | None:
    """Why the ground truth, the output or a side file needs Spark's file systems, or
    None. ``side``: the other files a run reads or writes (groups, split, private output,
    previous and compared boards; None when not given): one named with a scheme, ``file:``
    included, is read or written through Hadoop's file systems (core/fs.py), so on Spark."""
    from disc21spark.core import formats

    if ground_truth is not None and formats.local_path(ground_truth) is None:
        return f"{ground_truth}: the ground truth is not a local file"
    if output and is_uri(output):
        return f"{output}: an output written through Hadoop's file systems"
    uri = next((p for p in side if p and is_uri(p)), None)
    return f"{uri}: read or written through Hadoop's file systems" if uri else None


def missing_local_file(paths: Sequence[str]) -> str | None:
    """The first input named as a plain local path (no scheme, no glob) that is not there."""
    for path in paths:
        if is_plain(display_path(path)) and not os.path.exists(display_path(path)):
            return path
    return None
