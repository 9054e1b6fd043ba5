"""Output folders that appear whole or not at all, and never replace a user's files unasked."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from disc21spark.core.errors import OutputError


def check_writable(path: str | os.PathLike, overwrite: bool) -> Path:
    """Fail early, before any work, when the results could not be published."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise OutputError(f"{out}: folder exists and is not empty (pass --overwrite to replace it)")
    if not out.parent.exists():
        raise OutputError(f"{out.parent}: parent folder does not exist")
    try:  # the staging folder goes beside it: fail now, not after the work
        tempfile.TemporaryDirectory(prefix=f".{out.name}.probe-", dir=out.parent).cleanup()
    except OSError as exc:
        raise OutputError(f"{out.parent}: cannot write the output folder here ({exc})") from None
    return out


@contextmanager
def staged_output(path: str | os.PathLike, overwrite: bool) -> Iterator[Path]:
    """Yield an empty staging folder beside `path`; on success it becomes `path` in one rename.

    On any failure the staging folder is removed and `path` is left as it was.
    """
    out = check_writable(path, overwrite)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
    try:
        yield stage
        check_writable(out, overwrite)  # someone may have written there meanwhile
        if out.is_dir():
            if any(out.iterdir()):
                old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
                os.replace(out, old / out.name)
                os.replace(stage, out)
                shutil.rmtree(old, ignore_errors=True)
                return
            out.rmdir()
        os.replace(stage, out)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
