"""The in-process engine's reader (``matching/inprocess/local.py`` scores what it returns): one
file read with Arrow's multi-threaded CSV reader under the official reader's rules as the
Spark job applies them (the line stripped and split on commas, no quoting, each field
stripped, a ``query_id,reference_id,score`` line skipped), or a Parquet file's columns.

A bad file gets the Spark job's message: the fast path only notices that something is
wrong, then the file is read again line by line in Python to name the first bad line
with the same rules and words (``rows.line_problem``). Nothing here imports PySpark.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from disc21spark.core import damage
from disc21spark.core.errors import InputError, column_list, first_line
from disc21spark.core.formats import NotForThisEngine, plain_types
from disc21spark.matching.inprocess.arrays import compute, numbers, offsets, strings
from disc21spark.matching.inprocess.line_scan import LONGEST_LINE, first_bad_line
from disc21spark.matching.inprocess.source import Source, parquet_table
from disc21spark.matching.rows import (
    PREDICTION_COLUMNS,
    REPLACEMENT,
    WHITESPACE,
    parquet_problem,
)


@dataclass(frozen=True)
class Pairs:
    """One submission's pairs after the checks: stripped ids and finite scores."""

    query: pa.Array
    reference: pa.Array
    score: np.ndarray


_HEADER = strings(PREDICTION_COLUMNS)


def iter_pairs(source: Source, batch_bytes: int) -> Iterator[Pairs]:
    """The checked pairs of one file, a batch at a time (about ``batch_bytes`` of CSV, or
    as many Parquet rows), in memory bounded by the batch; InputError naming the file's
    first bad row (looked for from the start of the batch that found it: every line
    before passed the checks)."""
    if source.pairs is not None:  # a table in memory, checked as it was taken in
        yield source.pairs
        return
    if source.format == "parquet":
        yield from _parquet_batches(source, max(1, batch_bytes // 24))
        return
    import pyarrow.csv as csv

    bad_rows: list[object] = []
    options = _csv_options(bad_rows)
    start = (0, 0)  # the chunk's first byte and the lines before it: where a scan begins
    with _quiet_decoding():
        try:
            for chunk, start in _line_chunks(source, batch_bytes):
                try:
                    table = csv.read_csv(pa.py_buffer(chunk), **options)
                except pa.ArrowInvalid as exc:
                    if "Empty CSV file" in str(exc):  # blank lines only
                        continue
                    raise
                yield _checked(source, table, bad_rows, start, chunk)
        except pa.ArrowInvalid as exc:
            raise _unreadable_csv(source, exc, start) from None
        except (OSError, EOFError, zlib.error) as exc:
            raise _unreadable_csv(source, OSError(f"{type(exc).__name__}: {exc}")) from None


def _line_chunks(source: Source, size: int) -> Iterator[tuple[bytes, tuple[int, int]]]:
    """The decompressed bytes of a CSV file in chunks of about ``size`` that end at a
    line's end (Arrow's and Python's: a newline, a carriage return, or both), each parsed
    by Arrow's multi-threaded reader as a file of its own; with each, (its first byte's
    offset, the lines before it), so that a bad line is looked for from there. A line
    longer than the reader takes (LONGEST_LINE) is named before it is held whole."""
    carry, at, before = b"", (0, 0), b""
    with source.open_binary() as fh:
        while block := fh.read(size):
            # the chunk before counted only when another follows: a file of one chunk (a
            # 500,000-pair file) is never counted (three passes over its bytes, 17 ms)
            at, before = _after(at, before), b""
            data = carry + block if carry else block
            cut = _last_line_end(data)
            if cut < 0:
                if len(data) > 2 * LONGEST_LINE:
                    raise first_bad_line(source, start=at)
                carry = data
                continue
            carry, chunk = data[cut + 1 :], data[: cut + 1]
            yield chunk, at
            before = chunk
    if carry:
        yield carry, _after(at, before)


def _after(at: tuple[int, int], chunk: bytes) -> tuple[int, int]:
    """(first byte, lines before) of what follows ``chunk``, which starts at ``at``."""
    return (at[0] + len(chunk), at[1] + _line_ends(chunk)) if chunk else at


def _last_line_end(data: bytes) -> int:
    """The position of the last line end of ``data`` that is surely one (-1: none): a
    final carriage return may be the first half of a CR LF the next block ends."""
    cut = data.rfind(b"\n")
    if cut < 0:
        cut = data.rfind(b"\r")
        if cut == len(data) - 1:
            cut = data.rfind(b"\r", 0, cut)
    return cut


def _line_ends(chunk: bytes) -> int:
    return chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")


def _csv_options(bad_rows: list) -> dict:
    """Arrow's CSV options under the official reader's rules; a line of the wrong field
    count (not blanks only) is put in ``bad_rows`` and skipped."""
    import pyarrow.csv as csv

    def invalid(row) -> str:  # a wrong field count, or a line of blanks only
        if row.text.strip(WHITESPACE):
            bad_rows.append(row)
        return "skip"

    return dict(
        read_options=csv.ReadOptions(column_names=list(PREDICTION_COLUMNS)),
        parse_options=csv.ParseOptions(
            quote_char=False, escape_char=False, invalid_row_handler=invalid
        ),
        convert_options=csv.ConvertOptions(
            column_types={c: pa.string() for c in PREDICTION_COLUMNS},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )


@contextmanager
def _quiet_decoding() -> Iterator[None]:
    """A line that is not UTF-8 fails inside Arrow's call of the invalid-row handler
    (pyarrow decodes its text first) and pyarrow prints that trace; the line is named by
    ``line_scan.first_bad_line`` instead."""
    hook = sys.unraisablehook
    sys.unraisablehook = lambda _: None
    try:
        yield
    finally:
        sys.unraisablehook = hook


def _unreadable_csv(source: Source, exc: Exception, start: tuple[int, int] = (0, 0)) -> InputError:
    """Bytes that are not UTF-8, a line Arrow's handler could not see, a damaged stream:
    the damage or the first bad line by name (looked for from ``start``)."""
    damaged = _damaged_stream(source)
    if damaged:
        return damaged
    if isinstance(exc, pa.ArrowInvalid):
        return first_bad_line(source, f"cannot be read ({first_line(exc)})", start)
    return InputError(source.where, f"cannot be read ({first_line(exc)})")


def _checked(
    source: Source, table, bad_rows: list, start: tuple[int, int], chunk: bytes = b""
) -> Pairs:
    """The pairs of a table or batch of the three string columns: ids stripped, header
    lines left out, scores parsed; the first bad line of the file raised when anything
    is wrong (a skipped line in ``bad_rows``, a score that is no finite number, an empty
    id, an id of bytes that were not UTF-8). ``chunk``: the CSV bytes the table was read
    from, whose bytes alone can tell that no field needs stripping or holds U+FFFD (each
    of those passes over every id took longer than Arrow's read of them)."""
    # no field holds a line end (\r among them): without a blank or a tab, none has
    # anything to strip
    strip = not chunk or b" " in chunk or b"\t" in chunk
    query, reference, raw = (
        compute("utf8_trim", _whole(table.column(c)), characters=WHITESPACE)
        if strip
        else _whole(table.column(c))
        for c in PREDICTION_COLUMNS
    )
    # the usual header line, the first, taken off by a slice (no copy); every other score
    # a number: no header line can be among the rows (its score is "score"), so the
    # three-column comparison is made only when the scores do not all parse
    first = 1 if len(raw) and _is_header(query, reference, raw) else 0
    score = _scores(raw.slice(first))
    if score is not None:
        query, reference = query.slice(first), reference.slice(first)
    else:
        same = [compute("equal", c, _HEADER[i]) for i, c in enumerate((query, reference, raw))]
        header = compute("and", compute("and", same[0], same[1]), same[2])
        if compute("any", header).as_py():
            keep = compute("invert", header)
            # not Array.filter: it imports pyarrow.compute
            query, reference, raw = (compute("filter", c, keep) for c in (query, reference, raw))
            score = _scores(raw)
    replaced = not chunk or REPLACEMENT.encode() in chunk
    if (
        bad_rows
        or score is None
        or _any_empty(query, reference)
        or (replaced and _any_replaced(query, reference))
    ):
        raise first_bad_line(source, start=start)
    return Pairs(query, reference, score)


def _is_header(*columns: pa.Array) -> bool:
    """Whether the first row of the three columns is the header line's fields."""
    return all(c[0].as_py() == name for c, name in zip(columns, PREDICTION_COLUMNS))


def _whole(column) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _refuse_bytes_not_utf8(where: str, query: pa.Array, reference: pa.Array) -> None:
    """An id of a Parquet file whose bytes are not UTF-8 (Arrow does not check a page's
    strings; a flipped bit makes one): refused, the row named, as a CSV line is. Found by
    tests/test_fuzz.py (it was an internal error further on)."""
    bad = []
    for column in (query, reference):
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            texts = column.cast(pa.binary()).to_pylist()
            bad.append(next(i for i, t in enumerate(texts) if t is not None and not _utf8(t)))
    if bad:
        i = min(bad)
        q, r = (
            c.cast(pa.binary())[i].as_py().decode("utf-8", "replace") for c in (query, reference)
        )
        raise InputError(
            where,
            "not UTF-8 text (an id's bytes are not UTF-8)",
            f"row query_id={q!r}, reference_id={r!r}",
        )


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _damaged_stream(source: Source) -> InputError | None:
    """A damaged ``.gz`` file in ``core/damage.py``'s words (Spark's side gives the same),
    before any line of it is looked at: on Spark too a damaged stream fails the read."""
    if source.codec != ".gz":
        return None
    with source.open_raw() as raw:
        reason = damage.gzip_reason(raw)
    return InputError(source.where, reason) if reason else None


def _scores(raw: pa.Array) -> np.ndarray | None:
    """Finite scores, -0.0 made 0.0 (they tie in the official sort); None if any is not."""
    try:
        score = numbers(compute("cast", raw, target_type=pa.float64()))
    except pa.ArrowInvalid:
        return None
    if not np.isfinite(score).all():
        return None
    return score + 0.0


def _any_empty(*columns: pa.Array) -> bool:
    # an empty string starts where the next one does
    return any(bool((np.diff(offsets(c)) == 0).any()) for c in columns)


def _any_replaced(*columns: pa.Array) -> bool:
    # U+FFFD in an id is what Spark's reader makes of bytes that are not UTF-8: refused alike
    return any(
        compute("any", compute("match_substring", c, pattern=REPLACEMENT)).as_py() for c in columns
    )


def _read_parquet(source: Source) -> Pairs:
    return _checked_parquet(source.where, parquet_table(source))


def _parquet_batches(source: Source, rows: int) -> Iterator[Pairs]:
    """A Parquet file's checked pairs, ``rows`` at a time; a file Arrow cannot open as it
    is (a damaged footer, a damaged schema) is read whole by ``parquet_table``, whose
    messages name the damage."""
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(source.arrow_input())
        names = file.schema_arrow.names
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError):
        yield _read_parquet(source)
        return
    if any(c not in names for c in PREDICTION_COLUMNS):
        yield _checked_parquet(source.where, file.schema_arrow.empty_table())
        return
    try:
        for batch in file.iter_batches(batch_size=rows, columns=list(PREDICTION_COLUMNS)):
            yield _checked_parquet(source.where, batch)
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError) as exc:
        # a damaged row group: the whole-file Parquet reader names the damage as Spark does
        parquet_table(source)
        raise InputError(source.where, f"cannot be read ({first_line(exc)})") from None


def _checked_parquet(where: str, table) -> Pairs:
    """The pairs of a Parquet table or batch; InputError naming its first bad row."""
    names = table.schema.names
    missing = [c for c in PREDICTION_COLUMNS if c not in names]
    if missing:
        has = column_list(names)
        raise InputError(where, f"missing column {missing[0]!r} (has: {has})")
    if not plain_types(table.schema):
        raise NotForThisEngine(f"{where}: ids that are not strings or a score that is not a number")
    query, reference = (_whole(table.column(c)) for c in PREDICTION_COLUMNS[:2])
    _refuse_bytes_not_utf8(where, query, reference)
    score = _whole(table.column("score")).cast(pa.float64())
    values = score.to_numpy(zero_copy_only=False)
    problem = parquet_problem(query, reference, score, values)
    if problem is not None:
        (q, r), reason = problem
        raise InputError(where, reason, f"row query_id={q!r}, reference_id={r!r}")
    return Pairs(query, reference, values + 0.0)
