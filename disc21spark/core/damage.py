"""What a damaged Parquet or gzip file is called: the same words on both engines.

Arrow (the in-process engine) and parquet-mr (Spark) fail on a damaged file at different
places and in words of their own (``Parquet magic bytes not found in footer`` against
``footer is too large`` for one file), so the verdict of a run would depend on its
engine. Both engines therefore give the reason below instead of their reader's: it is
computed from the file's size and its first 4 and last 8 bytes (the layout every Parquet
file shares: ``PAR1`` at both ends, the footer's length just before the last one), which
both engines read alike.
"""

from __future__ import annotations

import zlib
from typing import IO, Any

MAGIC = b"PAR1"
HEAD = len(MAGIC)
TAIL = 4 + len(MAGIC)  # the footer's length (4 bytes, little-endian), then the magic
SHORTEST = HEAD + TAIL
GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20  # bytes read, and inflated, at a time: a gzip bomb is told in bounded memory


def parquet_reason(size: int, head: bytes, tail: bytes) -> str:
    """The reason a Parquet file of ``size`` bytes, starting with ``head`` (its first 4
    bytes) and ending with ``tail`` (its last 8), cannot be read: one line, the same on
    both engines."""
    if size < SHORTEST:
        detail = (
            f"truncated, or not a Parquet file: {size:,} byte{'s' * (size != 1)}, "
            f"fewer than the {SHORTEST} of the smallest"
        )
    elif head[:HEAD] != MAGIC or tail[-HEAD:] != MAGIC:
        detail = "not a Parquet file, or a damaged one: no PAR1 magic number at both ends"
    elif int.from_bytes(tail[:4], "little") > size - SHORTEST:
        footer = int.from_bytes(tail[:4], "little")
        detail = (
            f"truncated or damaged: its footer is said to be {footer:,} bytes, more "
            "than the file holds"
        )
    else:
        detail = "damaged: its metadata or data pages cannot be decoded"
    return f"cannot be read as Parquet ({detail})"


def parquet_reason_of_bytes(data: bytes) -> str:
    """``parquet_reason`` of a whole file's bytes."""
    return parquet_reason(len(data), data[:HEAD], data[-TAIL:])


def parquet_reason_of_file(path: str, spark: Any = None) -> str | None:
    """``parquet_reason`` of one file on any file system; None when ``path`` is no file
    (a folder, a glob: the reader's own words are kept) or its ends cannot be read."""
    from disc21spark.core import fs

    ends = fs.read_ends(path, HEAD, TAIL, spark)
    return None if ends is None else parquet_reason(*ends)


def gzip_reason(raw: IO[bytes]) -> str | None:
    """The reason the gzip bytes of ``raw`` cannot be inflated (one or more members, as
    both engines read them), or None when they can. Inflated 1 MiB at a time, the output
    dropped."""
    data = raw.read(CHUNK)
    if data[:2] != GZIP_MAGIC:
        return "cannot be read as gzip (not gzip: no gzip magic number at its start)"
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while True:
        try:
            inflater.decompress(data, CHUNK)
        except zlib.error as exc:  # "Error -3 while decompressing data: invalid block type"
            return f"cannot be read as gzip (damaged: {str(exc).rsplit(': ', 1)[-1]})"
        if inflater.eof:  # a member ends: another may follow
            data = inflater.unused_data or raw.read(CHUNK)
            if not data:
                return None
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            continue
        data = inflater.unconsumed_tail or raw.read(CHUNK)
        if not data:
            break
    return "cannot be read as gzip (truncated: the compressed stream ends before its end)"


def unreadable(path: str, exc: BaseException, fmt: str, spark: Any = None) -> str:
    """Why ``path`` (read as ``fmt``: csv or parquet) could not be read, after the reader
    raised ``exc``: for one Parquet or ``.gz`` file the reasons above (the in-process
    engine's words too), else the reader's first line (a folder of files, another codec)."""
    from disc21spark.core import fs
    from disc21spark.core.errors import first_line

    reason = None
    if fmt == "parquet":
        reason = parquet_reason_of_file(path, spark)
    elif path.lower().endswith(".gz") and fs.read_ends(path, 0, 0, spark) is not None:
        with fs.local_copy(path, spark) as plain, open(plain, "rb") as raw:
            reason = gzip_reason(raw)
    return reason or f"cannot be read ({first_line(exc)})"
