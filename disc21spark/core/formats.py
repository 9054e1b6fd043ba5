"""Which files the in-process reader (Arrow) reads as Spark's readers read them: by the
name (format and codec, as Spark decides them) and, for a local Parquet file, by its
schema. The decision module (``engine.py``) asks these before choosing an engine or a
plan; the in-process reader applies the same rules. Nothing here reads a row.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

import pyarrow as pa

from disc21spark.core.paths import ARROW_CODECS, HADOOP_CODECS, detect_format, display_path, is_glob

# the columns of a predictions file, in order
PREDICTION_COLUMNS = ("query_id", "reference_id", "score")
# what Arrow reads from a local path (compression from the name, as Spark's codecs do)
CSV_SUFFIXES = tuple(f"{kind}{c}" for kind in (".csv", ".txt") for c in ("", *ARROW_CODECS))
# codecs Hadoop reads and Arrow does not take from a file name
HADOOP_ONLY = tuple(c for c in HADOOP_CODECS if c not in ARROW_CODECS)


class NotForThisEngine(Exception):
    """The input needs the Spark engine (a remote path, a folder, a format Arrow reads
    differently from Spark); ``--engine auto`` then starts Spark."""


def local_path(path: str) -> str | None:
    """The plain local file a path names, or None (another file system, a glob, a folder)."""
    if "://" in path and not path.startswith("file://"):
        return None
    plain = display_path(path)  # file:/x and file:///x, as Hadoop lists local files
    if is_glob(plain) or not os.path.isfile(plain):
        return None
    return plain


def file_format(path: str, fmt: str) -> str:
    """csv or parquet, as the Spark job decides (``detect_format``); NotForThisEngine for
    a codec Arrow does not read. Only the name is looked at: any file system."""
    if detect_format(path, fmt) == "parquet":
        return "parquet"
    name = PurePosixPath(path.lower().rstrip("/")).name
    plain = "." not in name
    if name.endswith(CSV_SUFFIXES) or plain or (fmt == "csv" and not name.endswith(HADOOP_ONLY)):
        return "csv"
    raise NotForThisEngine(f"{path}: a file Arrow does not read as Spark does")


def unsupported(path: str, fmt: str = "auto") -> str | None:
    """Why this engine cannot read the local file ``path`` as Spark would (None: it can)."""
    plain = local_path(path)
    if plain is None:
        return f"{path}: not one local file"
    return format_problem(path, fmt, plain)


def format_problem(path: str, fmt: str, plain: str | None = None) -> str | None:
    """Why this engine cannot read ``path`` (any file system) as Spark would, from its
    name, and for a local Parquet file (``plain``) from its schema; None: it can."""
    try:
        kind = file_format(path, fmt)
    except NotForThisEngine as exc:
        return str(exc)
    if kind == "parquet" and plain is not None:
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(plain)
        except (pa.ArrowInvalid, OSError, UnicodeDecodeError):  # a name that is not UTF-8
            return None  # unreadable: this engine says so in one line, as Spark would
        if not plain_types(schema):
            return f"{path}: ids that are not strings or a score that is not a number"
    return None


def plain_types(schema: pa.Schema) -> bool:
    """String ids and a numeric score: the Parquet columns read alike by Arrow and Spark."""
    if not all(c in schema.names for c in PREDICTION_COLUMNS):
        return True  # a missing column: said in one line by the reader
    q, r, s = (schema.field(c).type for c in PREDICTION_COLUMNS)
    text = pa.types.is_string
    return text(q) and text(r) and (pa.types.is_floating(s) or pa.types.is_integer(s))
