"""One input file of the in-process engine: a local file, or its bytes in memory.

The per-file plan reads a submission's bytes on an executor through Spark (the
``binaryFile`` source serves every Hadoop path: hdfs://, s3a://, gs://, abfs://,
viewfs://...), so the in-process reader takes either a local path or those bytes, with
the format and codec the decision resolved from the file's name as Spark's readers go
by it (``resolve.ResolvedInput``). Nothing here imports PySpark.
"""

from __future__ import annotations

import bz2
import gzip
import io
import os
import zlib
from dataclasses import dataclass, field
from typing import IO, Any

from disc21spark.core import damage
from disc21spark.core.errors import InputError, column_list, first_line
from disc21spark.core.paths import display_path
from disc21spark.matching.rows import Row, parse_csv_line

# the codecs decompressed here, keyed by the suffix Hadoop's codec factory goes by
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open}


@dataclass(frozen=True)
class Source:
    """A file's bytes (``path`` on this machine, else ``data`` as stored) and ``where``,
    the name every message gives it; ``codec`` the Hadoop codec suffix the decision
    resolved (``resolve.ResolvedInput.codec``: ``.gz``, ``.bz2`` are decompressed here;
    None: stored as is)."""

    where: str
    path: str | None = None
    data: bytes | None = None
    # a table in memory (``of_table``): its checked pairs, and each row's label (a
    # pandas index label, or its position) that messages name it by
    pairs: Any = None
    row_labels: list | None = None
    # how it is read: csv, parquet (as the decision resolved it), or table (in memory)
    format: str = "csv"
    # always named: a Source made without it would read compressed bytes as text
    codec: str | None = field(kw_only=True)

    @classmethod
    def of_input(cls, resolved: Any) -> Source:
        """A local file resolved by the decision (``resolve.ResolvedInput`` whose
        ``local`` is set), named by its full path as the Spark job names files."""
        where = os.path.abspath(resolved.local)
        return cls(where, path=resolved.local, format=resolved.format, codec=resolved.codec)

    @classmethod
    def of_bytes(cls, uri: str, data: bytes, resolved: Any) -> Source:
        """The bytes of a file the decision resolved (``resolve.ResolvedInput``: its format
        and codec), read through Spark or by a pool's worker; ``uri`` as Spark lists the
        file (file:/x is /x)."""
        where = display_path(uri)
        return cls(where, data=data, format=resolved.format, codec=resolved.codec)

    @classmethod
    def of_table(cls, where: str, pairs: Any, row_labels: list) -> Source:
        """A table in memory (a pandas DataFrame, a pyarrow Table), its pairs already
        checked (``local_read.Pairs``); ``where`` names it in messages."""
        return cls(where, pairs=pairs, row_labels=row_labels, format="table", codec=None)

    def _opener(self):
        return _OPENERS.get(self.codec)

    def arrow_input(self):
        """What pyarrow's readers take: the local path (Arrow decompresses by the name),
        else a buffer of the decompressed bytes."""
        import pyarrow as pa

        if self.path is not None:
            return self.path
        opener = self._opener()
        try:
            data = self.data if opener is None else opener(io.BytesIO(self.data)).read()
        except (EOFError, zlib.error) as exc:  # a truncated or damaged stream
            raise OSError(f"{type(exc).__name__}: {exc}") from None
        return pa.BufferReader(data)

    def open_raw(self) -> IO[bytes]:
        """The file's bytes as stored (compressed or not), as a stream."""
        return open(self.path, "rb") if self.path is not None else io.BytesIO(self.data)

    def open_binary(self) -> IO[bytes]:
        """The decompressed bytes as a stream (.gz, .bz2: the codec resolved)."""
        raw = self.open_raw()
        opener = self._opener()
        return raw if opener is None else opener(raw)

    def open_text(self) -> IO[str]:
        # utf-8-sig: a leading byte-order mark is dropped, as Hadoop's line reader and Arrow do
        return io.TextIOWrapper(
            self.open_binary(), encoding="utf-8-sig", errors="replace", newline=""
        )


def local_lines(gt: Any) -> list[str] | None:
    """The lines of a local CSV file (plain, .gz or .bz2) resolved by the decision
    (``resolve.ResolvedInput``); None for a Parquet file or one that cannot be read
    (``local_table_rows`` then says why)."""
    try:
        if gt.local is None or gt.format == "parquet" or gt.unread is not None:
            return None
        with Source(gt.given, path=gt.local, codec=gt.codec).open_text() as fh:
            return fh.read().splitlines()
    except Exception:  # local_table_rows reads it again and names the problem
        return None


def local_table_rows(gt: Any, columns: tuple[str, ...]) -> list[Row]:
    """Records of a small local CSV (plain, .gz or .bz2) or Parquet file (the ground
    truth, a ``resolve.ResolvedInput``) with their line or row numbers:
    ``read.spark_table_rows`` without Spark. Raises InputError naming the path as given
    (missing, unreadable, a column missing)."""
    path = gt.given
    if gt.local is None:
        raise InputError(path, "no such file or directory")
    try:
        if gt.unread is not None:  # a name Arrow does not read as Spark does
            raise ValueError(gt.unread)
        if gt.format == "parquet":
            table = parquet_table(Source(path, path=gt.local, format="parquet", codec=gt.codec))
            missing = [c for c in columns if c not in table.column_names]
            if missing:
                has = column_list(table.column_names)
                raise InputError(path, f"missing column {missing[0]!r} (has: {has})")
            values = [table.column(c).cast("string").to_pylist() for c in columns]
            return [Row(f"row {i}", fields) for i, fields in enumerate(zip(*values), start=1)]
        with Source(path, path=gt.local, codec=gt.codec).open_text() as fh:
            lines = fh.read().splitlines()
    except InputError:
        raise
    except Exception as exc:  # unreadable: the user's file, in one line
        raise InputError(path, f"cannot be read ({first_line(exc)})") from None
    return [
        Row(f"line {i}", parse_csv_line(line)) for i, line in enumerate(lines, 1) if line.strip()
    ]


# the key under which Arrow stores its own schema in a Parquet footer; Spark's reader
# (parquet-mr) does not use it
ARROW_SCHEMA = b"ARROW:schema"


def parquet_table(source: Source) -> Any:
    """The ``pyarrow.Table`` of a Parquet file as Spark's reader sees it: a file whose
    Arrow schema metadata is damaged, which Spark reads without looking at it, is read
    again with that key renamed in its footer (Arrow then goes by the Parquet schema
    alone, as Spark does).

    Raises InputError naming ``source.where`` with ``core/damage.py``'s reason, the
    words Spark's side gives for the same file."""
    import pyarrow as pa  # not at the top: the module serves callers without Arrow too

    try:
        return _arrow_table(source.arrow_input())
    except _unreadable():
        pass
    data = source.data if source.data is not None else _read_bytes(source)
    patched = _without_arrow_schema(data)
    if patched is not None:
        try:
            return _arrow_table(pa.BufferReader(patched))
        except _unreadable():
            pass
    raise InputError(source.where, damage.parquet_reason_of_bytes(data)) from None


def _arrow_table(where: Any) -> Any:
    import pyarrow.parquet as pq

    table = pq.read_table(where)
    table.column_names  # noqa: B018 (a name that is not UTF-8 fails here: tests/test_fuzz.py)
    return table


def _unreadable() -> tuple[type[Exception], ...]:
    import pyarrow as pa

    return (pa.ArrowInvalid, OSError, UnicodeDecodeError)


def _without_arrow_schema(data: bytes) -> bytes | None:
    """The file with ``ARROW:schema`` renamed in its footer (same length: nothing else
    moves), or None when its footer holds no such key. The last one: the key-value
    metadata follows the row groups, whose statistics may hold an id of those letters
    (base64 has no colon: the value cannot)."""
    footer = int.from_bytes(data[-8:-4], "little") if len(data) >= damage.SHORTEST else 0
    start = len(data) - damage.TAIL - footer
    at = data.rfind(ARROW_SCHEMA, start) if 0 <= start < len(data) - damage.TAIL else -1
    if at < 0:
        return None
    return data[:at] + ARROW_SCHEMA[:-1] + b"_" + data[at + len(ARROW_SCHEMA) :]


def _read_bytes(source: Source) -> bytes:
    try:
        with open(source.path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise InputError(source.where, f"cannot be read ({exc.strerror or exc})") from None
