"""One writer per output folder: a lock file beside it for the whole run.

A scheduler's overlapping runs, or a user's double click, would otherwise both write the
same output and the later one would silently replace the earlier. The runner takes the
lock ``.<name>.lock`` beside the output before Spark starts (an output on a Hadoop file
system: as soon as Spark runs) and removes it when the run ends, however it ends short
of SIGKILL; a second run finds it and stops at once with one line naming the other run
(its pid, host, start).

* Plain paths and ``file:`` URIs: an ``flock`` on that file. The system drops it when its
  process ends, however it ends (SIGKILL, the OOM killer), so a dead writer's file is
  free debris that the next run takes over and removes, as staging folders are.
* Other Hadoop URIs (``hdfs://``, ``viewfs://``, ``s3a://``...), through ``core/fs.py``:
  the file is made with ``create(overwrite=False)``, on HDFS one atomic step of the name
  node (of two runs, one makes it and the other finds it). No ``flock`` vanishes with its
  process there, so the file says who holds it (pid, host, start, a token) and its
  holder touches its modification time every ``BEAT`` seconds. A lock is a dead
  writer's when its pid is gone on this host, or when it was not touched for ``STALE``
  seconds (the clocks taken to agree within a minute). A dead writer's lock is renamed
  aside (atomic on HDFS: of two takers one wins), checked to be the one judged dead, and
  removed; the create is then tried again.
* Object stores (S3A, GCS, ABFS) have neither an atomic create (S3A looks, then writes)
  nor an atomic rename, and S3A keeps no modification time a writer can touch: there the
  lock stops a second run that starts once the first one's lock is visible, and a run on
  another host takes a lock over after ``STALE`` seconds. Two runs there still never mix
  files: each publishes its own staged folder, the later one replacing the earlier.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from disc21spark.core import fs, paths, record
from disc21spark.core.errors import OutputError
from disc21spark.core.paths import display_path

BEAT = 30.0  # seconds between two touches of a lock held on a Hadoop file system
STALE = 300.0  # a Hadoop lock untouched this long is a dead writer's
# stores of objects, not folders: a missing parent is no reason to go without a lock
OBJECT_STORES = ("s3a", "s3", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs", "oss")


@dataclass
class Remote:
    """A lock held on a Hadoop file system: where, its token, the heartbeat's stop."""

    where: fs.HadoopPath
    token: str
    stop: threading.Event = field(default_factory=threading.Event)


_HELD: dict[str, tuple[Path, int]] = {}  # lock file → (it, its descriptor), held here
_REMOTE: dict[str, Remote] = {}  # lock URI → the lock, held here


def lock_path(output: str | os.PathLike) -> Path | None:
    """The local lock file of ``output``, or None for an output on another file system."""
    text = str(output)
    if paths.is_uri(text):
        if paths.scheme(text) != "file" or not display_path(text).startswith("/"):
            return None
        text = display_path(text)
    out = Path(text.rstrip("/") or "/")
    return out.parent / f".{out.name}.lock"


def lock_uri(output: str | os.PathLike) -> str | None:
    """The lock file of an output on a Hadoop file system (not ``file:``), or None."""
    text = str(output).rstrip("/")
    if lock_path(text) is not None or "/" not in text:
        return None
    parent, _, name = text.rpartition("/")
    return f"{parent}/.{name}.lock"


def acquire(output: str | os.PathLike) -> bool:
    """Take the lock of ``output`` for this process: True when taken now, False when this
    process holds it already or the output has no lock (no parent yet; a Hadoop URI
    before Spark runs: the runner asks again once it does).

    Raises OutputError naming the other run when a live one holds it."""
    uri = lock_uri(output)
    if uri is not None:
        files = fs.serving()
        if not isinstance(files, fs.SparkFiles) or uri in _REMOTE:
            return False  # no session yet: the runner asks again once Spark runs
        where = fs.HadoopPath(files.spark, uri, OutputError)
        if not _has_parent(where):
            return False  # Hadoop's create would make the parent: check_writable says so
        held = _acquire_remote(where)
        if isinstance(held, dict):
            raise OutputError(_busy(output, held))
        _REMOTE[uri] = held
        return True
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
            other = _parse(os.pread(fd, 65536, 0))
            os.close(fd)
            raise OutputError(_busy(output, other)) from None
        if _same_file(fd, path):
            break
        os.close(fd)  # the lock file was removed by its last writer meanwhile: again
    os.ftruncate(fd, 0)
    os.write(fd, (json.dumps(_me()) + "\n").encode())
    _HELD[str(path)] = (path, fd)
    return True


def held_here(path: Path) -> bool:
    """Whether ``path`` is a lock file this process holds (it does not make a folder
    holding it someone's files)."""
    return bool(_HELD) and any(held.resolve() == path.resolve() for held, _ in _HELD.values())


def release(output: str | os.PathLike) -> None:
    """Give up the lock of ``output``: the file removed first, then the lock dropped (a
    run that opened the file meanwhile sees it is gone and opens the path again)."""
    uri = lock_uri(output)
    if uri is not None:
        if uri in _REMOTE:
            _release_remote(_REMOTE.pop(uri))
        return
    path = lock_path(output)
    held = _HELD.pop(str(path), None) if path is not None else None
    if held is not None:
        held[0].unlink(missing_ok=True)
        os.close(held[1])


def release_all() -> None:
    """Give up every lock this process holds (the runner, when a run ends; before Spark
    stops, which a lock on a Hadoop file system needs)."""
    while _REMOTE:
        _release_remote(_REMOTE.popitem()[1])
    while _HELD:
        _, (path, fd) = _HELD.popitem()
        path.unlink(missing_ok=True)
        os.close(fd)


def alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs (another user's counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _me(token: str = "") -> dict:
    me = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": record.now(),
        "command": " ".join(sys.argv),
    }
    return {**me, "token": token} if token else me


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _busy(output: str | os.PathLike, other: dict) -> str:
    who = (
        f"pid {other.get('pid')} on {other.get('host')}, started {other.get('started')}"
        if other
        else "a run starting now"
    )
    return (
        f"{display_path(str(output))}: another run is writing this output ({who}); "
        "wait for it to end or stop it"
    )


def _parse(data: bytes) -> dict:
    """What a lock file says of its writer (empty while that writer is writing it)."""
    try:
        found = json.loads(data or b"{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


# ------------------------------------------------------------ on a Hadoop file system


def _acquire_remote(where: fs.HadoopPath) -> Remote | dict:
    """The Remote lock, taken; or what the lock file says of the live run holding it."""
    token = uuid.uuid4().hex
    data = (json.dumps(_me(token)) + "\n").encode()
    for _ in range(5):  # a dead writer's lock taken away, or one released meanwhile
        if fs.create_new(where, data):
            held = Remote(where, token)
            threading.Thread(
                target=_beat, args=(held,), daemon=True, name="disc21spark-lock"
            ).start()
            return held
        found = fs.read_small(where)
        if found is None:
            continue
        holder = _parse(found[0])
        if not _dead(holder, time.time() - found[1]):
            return holder
        _take_away(where, found[0])
    return {}


def _has_parent(where: fs.HadoopPath) -> bool:
    if paths.scheme(where.text) in OBJECT_STORES:
        return True
    try:
        return where.exists(where.path.getParent())
    except Exception as exc:
        raise fs.failure(where.text, exc, OutputError) from None


def _release_remote(held: Remote) -> None:
    held.stop.set()
    try:
        found = fs.read_small(held.where)
        if found is not None and _parse(found[0]).get("token") == held.token:
            held.where.fs.delete(held.where.path, False)
    except Exception:  # the JVM may be gone already: the next run takes the lock over
        pass


def _beat(held: Remote) -> None:
    while not held.stop.wait(BEAT):
        try:
            held.where.fs.setTimes(held.where.path, int(time.time() * 1000), -1)
        except Exception:  # the session stopped, the file removed: nothing to keep up
            return


def _dead(holder: dict, age: float) -> bool:
    """Whether the writer of a lock is gone: its pid on this host, else its heartbeat."""
    pid = holder.get("pid")
    if holder.get("host") == socket.gethostname() and isinstance(pid, int) and not alive(pid):
        return True
    return age > STALE


def _take_away(where: fs.HadoopPath, judged: bytes) -> None:
    """Remove the dead writer's lock whose bytes were ``judged``: renamed aside first, so
    that of two runs taking it over one does; a lock that turns out to be another's (made
    since it was judged) is put back."""
    aside = fs.hadoop_path(where.jvm, f"{where.text}.stale-{uuid.uuid4().hex[:8]}")
    try:
        if not where.fs.rename(where.path, aside):
            return
        stream = where.fs.open(aside)
        try:
            moved = bytes(stream.readNBytes(65536))
        finally:
            stream.close()
        if moved == judged:
            where.fs.delete(aside, False)
        else:
            where.fs.rename(aside, where.path)
    except Exception:  # a race with another taker: the next try sees what is left
        return
