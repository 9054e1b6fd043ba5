"""One writer per output folder: a lock file beside it for the whole run.

A scheduler's overlapping runs, or a user's double click, would otherwise both write the
same output and the later one would silently replace the earlier. The runner takes the
lock ``.<name>.lock`` beside the output before Spark
starts and removes it when the run ends, however it ends short of SIGKILL; a second run
finds it and stops at once with one line naming the other run (its pid, host, start).
The lock is an ``flock`` on that file: the system drops it when its process ends,
however it ends (SIGKILL, the OOM killer), so a dead writer's file is free debris that
the next run takes over and removes, as staging folders are.

Plain paths and ``file:`` URIs are locked; other URIs (HDFS, S3) have no exclusive
create that works on every store and are not.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from pathlib import Path

from disc21spark.core import paths, record
from disc21spark.core.errors import OutputError
from disc21spark.core.paths import display_path

_HELD: dict[str, tuple[Path, int]] = {}  # lock file → (it, its descriptor), held here


def lock_path(output: str | os.PathLike) -> Path | None:
    """The lock file of ``output``, or None for an output on a store that has none."""
    text = str(output)
    if paths.is_uri(text):
        if paths.scheme(text) != "file" or not display_path(text).startswith("/"):
            return None
        text = display_path(text)
    out = Path(text.rstrip("/") or "/")
    return out.parent / f".{out.name}.lock"


def acquire(output: str | os.PathLike) -> bool:
    """Take the lock of ``output`` for this process: True when taken now, False when this
    process holds it already or the output has no lock (a store without, no parent yet).

    Raises OutputError naming the other run when a live one holds it."""
    path = lock_path(output)
    if path is None or str(path) in _HELD or not path.parent.is_dir():
        return False
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:  # a folder this run cannot write: check_writable says so
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = _holder(fd)
            os.close(fd)
            raise OutputError(_busy(output, other)) from None
        if _same_file(fd, path):
            break
        os.close(fd)  # the lock file was removed by its last writer meanwhile: again
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": record.now(),
          "command": " ".join(sys.argv)}  # fmt: skip
    os.ftruncate(fd, 0)
    os.write(fd, (json.dumps(me) + "\n").encode())
    _HELD[str(path)] = (path, fd)
    return True


def release(output: str | os.PathLike) -> None:
    """Give up the lock of ``output``: the file removed first, then the lock dropped (a
    run that opened the file meanwhile sees it is gone and opens the path again)."""
    path = lock_path(output)
    held = _HELD.pop(str(path), None) if path is not None else None
    if held is not None:
        held[0].unlink(missing_ok=True)
        os.close(held[1])


def release_all() -> None:
    """Give up every lock this process holds (the runner, when a run ends)."""
    while _HELD:
        _, (path, fd) = _HELD.popitem()
        path.unlink(missing_ok=True)
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _busy(output: str | os.PathLike, other: dict) -> str:
    who = (f"pid {other.get('pid')} on {other.get('host')}, started {other.get('started')}"
           if other else "a run starting now")  # fmt: skip
    return (f"{display_path(str(output))}: another run is writing this output ({who}); "
            "wait for it to end or stop it")  # fmt: skip


def _holder(fd: int) -> dict:
    """What the lock says of its writer (empty while that writer is writing it)."""
    try:
        found = json.loads(os.pread(fd, 65536, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
