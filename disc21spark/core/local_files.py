"""A pool's files on this machine, listed as Hadoop lists them (``fs.sized_files``), so
that the decision module can tell a pool of local files without starting a JVM."""

from __future__ import annotations

import glob
import os
from pathlib import PurePosixPath

from disc21spark.core.errors import InputError
from disc21spark.core.paths import is_glob, is_uri

# what Python's glob reads otherwise than Hadoop's: [^a] and {a,b}, and an escape
NOT_LOCAL_GLOB = "[{\\"


def listable(path: str) -> bool:
    """Whether ``sized_files`` lists ``path`` as Hadoop would: a plain local path, or a
    glob of ``*`` and ``?`` alone."""
    return not is_uri(path) and not any(c in path for c in NOT_LOCAL_GLOB)


def sized_files(path: str) -> dict[str, int]:
    """``fs.sized_files`` of a ``listable`` local path: each file's absolute path and size
    in bytes, sorted. A folder's files one level down, those named ``_…`` or ``.…`` left
    out; a glob's matches hidden or not, as Hadoop's. InputError as there: no match, or a
    folder without a data file."""
    if is_glob(path):
        matches = sorted(glob.glob(path, include_hidden=True))
    else:
        matches = [path] if os.path.exists(path) else []
    if not matches:
        raise InputError(path, "no such file or directory")
    files: dict[str, int] = {}
    for match in matches:
        if not os.path.isdir(match):
            files[os.path.abspath(match)] = os.path.getsize(match)
            continue
        for entry in os.scandir(match):
            if entry.is_file() and not entry.name.startswith(("_", ".")):
                files[os.path.abspath(entry.path)] = entry.stat().st_size
    if not files:
        raise InputError(path, "folder holds no data file")
    return dict(sorted(files.items()))


def one_dataset(files: list[tuple[str, int]]) -> bool:
    """Whether a folder's listed files are one dataset's part files (one submission)."""
    return bool(files) and all(PurePosixPath(f).name.startswith("part-") for f, _ in files)
