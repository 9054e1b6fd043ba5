"""The slow path of the in-process reader: a CSV file read line by line in Python, with
the Spark job's rules and words, to name its first bad line (the fast path only notices
that a batch holds one) or the lines that hold a repeated pair. Nothing here imports
PySpark.
"""

from __future__ import annotations

import io

import pyarrow as pa

from disc21spark.core.errors import InputError
from disc21spark.matching.inprocess.arrays import compute, strings
from disc21spark.matching.inprocess.source import Source
from disc21spark.matching.rows import WHITESPACE, line_problem, parse_csv_line

LONGEST_LINE = 1 << 20  # characters: a DISC21 prediction line has under a hundred


def first_bad_line(
    source: Source,
    otherwise: str = "cannot be read (a line Arrow refused)",
    start: tuple[int, int] = (0, 0),
) -> InputError:
    """The first bad line of the file, named with the Spark job's words, looked for from
    ``start`` (a byte offset at a line's start and the lines before it: every line before
    passed the checks). A line is read LONGEST_LINE characters at most: a gzip bomb's
    one 1.5 GB line is refused in bounded memory instead of being read whole."""
    where = source.where
    with _text_from(source, start[0]) as fh:
        lines = iter(lambda: fh.readline(LONGEST_LINE + 2), "")
        for number, line in enumerate(lines, start=start[1] + 1):
            if len(line.rstrip("\r\n")) > LONGEST_LINE:
                return InputError(
                    where,
                    f"longer than {LONGEST_LINE:,} characters (not a line of predictions)",
                    f"line {number}",
                )
            if not line.strip(WHITESPACE + "\n"):
                continue
            problem = line_problem(parse_csv_line(line.rstrip("\n")), _parse_float)
            if problem:
                return InputError(where, problem, f"line {number}")
    return InputError(where, otherwise)


def _text_from(source: Source, offset: int):
    """The file's text from byte ``offset`` of its decompressed bytes (0: the start, a
    byte-order mark dropped), decoded as the line scan decodes it."""
    if not offset:
        return source.open_text()
    raw = source.open_binary()
    while offset:  # a compressed stream cannot seek: its bytes are read and dropped
        skipped = len(raw.read(min(offset, 1 << 24)))
        if not skipped:
            break
        offset -= skipped
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")


def _parse_float(text: str) -> float | None:
    """A score as Arrow reads it (the fast path's rule), or None."""
    try:
        return compute("cast", strings([text]), target_type=pa.float64())[0].as_py()
    except pa.ArrowInvalid:
        return None


def lines_holding(source: Source, wanted: tuple[str, str], limit: int = 2) -> list[int]:
    """The numbers of the first ``limit`` lines of a CSV file holding the pair ``wanted``
    (query id, reference id), read with the official reader's rules."""
    found = []
    with source.open_text() as fh:
        for number, line in enumerate(fh, start=1):
            if parse_csv_line(line.rstrip("\n"))[:2] == wanted:
                found.append(number)
                if len(found) == limit:
                    break
    return found
