"""What a path's text says, decided here only: its scheme, whether it is a glob, how it
is shown, and what its suffix means (format, compression codec, image).

Nothing here touches a file system (``core/fs.py`` does) or imports PySpark: the
in-process engine and ``--help`` use it as they are.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath

# what Hadoop's globbing expands (``*``, ``?``, ``[...]``, ``{a,b}``)
GLOB_CHARACTERS = "*?[{"
# the codecs Hadoop's CompressionCodecFactory picks by a file's suffix
HADOOP_CODECS = (".gz", ".bz2", ".zst", ".lz4", ".snappy", ".deflate")
# the codecs this process decompresses itself (Arrow by the name, or the standard library)
ARROW_CODECS = (".gz", ".bz2")
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
# the suffixes the ISC2021 reader strips from an image name to get its id
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")
# a scheme of two letters or more: "C:" is a Windows drive, not a file system
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")


def scheme(path: str) -> str | None:
    """The URI scheme of a path (``s3a``), or None for a plain local path."""
    found = _SCHEME.match(str(path))
    return found.group(1).lower() if found else None


def is_uri(path: str) -> bool:
    """Whether the path names a scheme (``file:`` included): read through Hadoop."""
    return scheme(path) is not None


def is_glob(path: str) -> bool:
    """Whether Hadoop's globbing would expand the path (``*``, ``?``, ``[...]``, ``{a,b}``)."""
    return any(c in path for c in GLOB_CHARACTERS)


def is_plain(path: str | os.PathLike) -> bool:
    """A plain local path: no scheme and no glob (it names one file or folder here)."""
    text = os.fspath(path)
    return not is_uri(text) and not is_glob(text)


def display_path(uri: str) -> str:
    """A local file URI as the plain path users type; other schemes unchanged."""
    for prefix in ("file://", "file:"):
        if uri.startswith(prefix):
            return uri[len(prefix) :] if uri[len(prefix) :].startswith("/") else uri
    return uri


def detect_format(path: str, fmt: str = "auto") -> str:
    """csv (also .csv.gz and any Hadoop codec) or parquet, from the name unless given."""
    if fmt != "auto":
        return fmt
    stripped = path.rstrip("/")
    return "parquet" if stripped.lower().endswith(PARQUET_SUFFIXES) else "csv"


def codec(path: str) -> str | None:
    """The Hadoop codec suffix a file name ends with (``.gz``), or None: stored as is."""
    suffix = PurePosixPath(path.lower().rstrip("/")).suffix
    return suffix if suffix in HADOOP_CODECS else None


def bare_image_name(base: str) -> str:
    """A file name without its image extension ('Q000123.jpg' -> 'Q000123'); any other
    name as it is."""
    stem, dot, suffix = base.rpartition(".")
    return stem if dot and f".{suffix.lower()}" in IMAGE_SUFFIXES else base


# the image extension as a regular expression (Java's on Spark, RE2 on Arrow: the
# pattern means the same in both)
IMAGE_SUFFIX_PATTERN = r"(?i)\.(" + "|".join(s.lstrip(".") for s in IMAGE_SUFFIXES) + ")$"
