"""Output folders that appear whole or not at all, and never replace a user's files unasked.

A plain path is written here with ``os.replace``; a URI (``file:///``, ``hdfs://``,
``s3a://``...) through Hadoop's file systems (``core/fs.py``). Either way the folder holds
the run record ``run.json`` and, once it is complete, ``_SUCCESS``.

Outputs are written into a staging folder on this machine, copied beside the target and
renamed onto it at the end, with a ``_SUCCESS`` marker. On HDFS and local disks the final
rename is atomic: readers see the old folder or the new one. Object stores (S3, GCS,
Azure) have no folder rename: Hadoop copies object by object, so a reader may briefly
see a partial folder; ``_SUCCESS`` is written into the staging folder first and is the
sign that a folder is complete.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from disc21spark.core import faults, fs, lock, paths, record, signals
from disc21spark.core.errors import OutputError
from disc21spark.core.frozen import FROZEN, frozen_error, refuse_frozen


def check_writable(path: str | os.PathLike, overwrite: bool) -> None:
    """Fail early, before any work, when the results could not be published. A folder
    the runner claimed for this run (``claim``) is checked already: a job's early check of
    it is not made again; a library call's is. The publish itself checks again, for what
    was written there meanwhile. A URI is checked once Spark runs (its file systems live
    in the JVM)."""
    if record.current().claimed(path):
        return
    _check_writable(str(path), overwrite)


def claim(path: str | os.PathLike, overwrite: bool) -> None:
    """The runner's one lock and check of its output folder, before the work (``path``
    on a Hadoop file system: once Spark runs); OutputError when another live run writes
    it or the results could not be published there."""
    lock.acquire(path)
    _check_writable(str(path), overwrite)
    record.current().claim(path)


def _check_writable(key: str, overwrite: bool) -> None:
    if paths.is_uri(key):
        if fs.active_session() is None:
            return
        _check_writable_uri(key, overwrite)
    else:
        out = Path(key)
        if out.parent.is_dir():
            recover(out)  # a previous output a killed run had set aside is put back first
        _check_local(out, overwrite)


def _check_local(out: Path, overwrite: bool) -> Path:
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a folder")
    refuse_frozen(out)
    if out.is_dir() and any(not lock.held_here(p) for p in out.iterdir()) and not overwrite:
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

    On any failure the staging folder is removed and `path` is left as it was. Raises
    OutputError when another live run writes `path` (``core/lock.py``).
    """
    claimed = record.current().claimed(path)  # a command's: the runner locked and checked it
    locked = not claimed and lock.acquire(path)
    try:
        if paths.is_uri(str(path)):
            with _staged_uri_output(str(path), overwrite, claimed) as stage:
                yield stage
                record.write(stage, record.current().is_private(path))
                faults.at("publish")
                signals.check()  # a signal whose raise py4j swallowed still stops the publish
            signals.published()
        else:
            with _staged_local(Path(path), overwrite, claimed) as stage:
                yield stage
    finally:
        if locked:
            lock.release(path)


@contextmanager
def _staged_local(out: Path, overwrite: bool, claimed: bool) -> Iterator[Path]:
    if not claimed:
        _check_writable(str(out), overwrite)
    try:
        stage = Path(tempfile.mkdtemp(prefix=f"{_prefix(out, 'staging')}", dir=out.parent))
    except OSError as exc:
        raise OutputError(f"{out.parent}: cannot write there ({exc.strerror or exc})") from None
    try:
        stage.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would become the output's mode
        yield stage
        record.write(stage, record.current().is_private(out))
        (stage / fs.SUCCESS).write_bytes(b"")
        _check_local(out, overwrite)  # someone may have written there meanwhile
        faults.at("publish")
        signals.check()  # a signal whose raise py4j swallowed still stops the publish
        signals.published()  # from here a signal is recorded, not raised: the run is done
        if out.is_dir():
            if any(out.iterdir()):
                _replace_folder(stage, out)
                return
            out.rmdir()
        os.replace(stage, out)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o022)  # reading it means setting it: put it straight back
    os.umask(mask)
    return mask


def _replace_folder(stage: Path, out: Path) -> None:
    """Put ``stage`` in place of the folder ``out``. Linux swaps the two in one step
    (``renameat2`` with ``RENAME_EXCHANGE``), so a reader, or a SIGKILL, sees the old
    folder or the new one and never neither; the stage then holds the old one and is
    removed by the caller. Elsewhere (or on a file system that cannot swap) the old folder
    is set aside first, and ``recover`` puts it back if the run dies between the renames."""
    if _exchange(stage, out):
        return
    old = Path(tempfile.mkdtemp(prefix=_prefix(out, "old"), dir=out.parent))
    os.replace(out, old / out.name)
    os.replace(stage, out)
    shutil.rmtree(old, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically; False where the system or file system cannot."""
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):  # glibc before 2.28, musl
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    done = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if done == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _prefix(out: Path, kind: str) -> str:
    """Staging and set-aside folders carry the writer's process id, so that the next run
    can tell debris (its writer is gone) from a run still going."""
    return f".{out.name}.{kind}-{os.getpid()}-"


def recover(out: Path) -> None:
    """Clean what a killed run (SIGKILL, a lost machine) left beside ``out``: its staging
    folders are removed; a previous output it had set aside but not yet replaced (killed
    between the two renames) is put back."""
    for kind in ("old", "staging"):
        for debris in out.parent.glob(f".{out.name}.{kind}-*-*"):
            pid = debris.name[len(f".{out.name}.{kind}-") :].split("-", 1)[0]
            if not pid.isdigit() or lock.alive(int(pid)):
                continue
            kept = debris / out.name
            if kind == "old" and kept.is_dir() and not out.exists():
                os.replace(kept, out)
            shutil.rmtree(debris, ignore_errors=True)


def _check_writable_uri(path: str, overwrite: bool, spark: Any = None) -> None:
    """The checks of ``output.check_writable`` for a URI target."""
    spark = spark or fs.session_for(path, OutputError)
    where = fs.HadoopPath(spark, path, OutputError)
    try:
        if where.exists():
            if not where.is_dir():
                raise OutputError(f"{path}: exists and is not a folder")
            if where.exists(where.child(FROZEN)):
                raise frozen_error(path)
            if not overwrite and not where.is_empty_dir():
                raise OutputError(
                    f"{path}: folder exists and is not empty (pass --overwrite to replace it)"
                )
        parent = where.path.getParent()
        # object stores have no folders to create: only a real file system needs a parent
        if (
            parent is not None
            and paths.scheme(path) in ("file", "hdfs")
            and not where.exists(parent)
        ):
            raise OutputError(f"{parent.toString()}: parent folder does not exist")
    except OutputError:
        raise
    except Exception as exc:
        raise fs.failure(path, exc, OutputError) from None


@contextmanager
def _staged_uri_output(path: str, overwrite: bool, claimed: bool) -> Iterator[Path]:
    """``output.staged_output`` for a URI: write here, then copy beside the target and
    rename onto it (see the module's note on object stores)."""
    spark = fs.session_for(path, OutputError)
    if not claimed:
        _check_writable(path, overwrite)
    local = Path(tempfile.mkdtemp(prefix="disc21spark-out-"))
    try:
        yield local
        (local / fs.SUCCESS).write_bytes(b"")
        _commit(spark, local, path, overwrite)
    finally:
        shutil.rmtree(local, ignore_errors=True)


def _commit(spark: Any, local: Path, path: str, overwrite: bool) -> None:
    """Copy the finished folder ``local`` beside ``path`` and rename it onto ``path``."""
    where = fs.HadoopPath(spark, path, OutputError)
    parent = where.path.getParent()
    token = uuid.uuid4().hex[:8]
    staging = fs.hadoop_path(where.jvm, parent, f".{where.path.getName()}.staging-{token}")
    old = fs.hadoop_path(where.jvm, parent, f".{where.path.getName()}.old-{token}")
    try:
        where.fs.copyFromLocalFile(False, True, fs.hadoop_path(where.jvm, local.as_uri()), staging)
        _check_writable_uri(path, overwrite, spark)  # someone may have written there meanwhile
        moved_old = False
        if where.exists():
            if not where.fs.rename(where.path, old):
                raise OutputError(f"{path}: the previous folder could not be moved aside")
            moved_old = True
        if not where.fs.rename(staging, where.path):
            if moved_old:
                where.fs.rename(old, where.path)
            raise OutputError(f"{path}: the finished folder could not be renamed into place")
        if moved_old:
            where.fs.delete(old, True)
    except OutputError:
        _remove(where, staging)
        raise
    except Exception as exc:
        _remove(where, staging)
        raise fs.failure(path, exc, OutputError) from None
    except BaseException:  # a signal: no staging folder left behind
        _remove(where, staging)
        raise


def _remove(where: fs.HadoopPath, path: Any) -> None:
    try:
        if where.fs.exists(path):
            where.fs.delete(path, True)
    except Exception:  # the error being reported matters more than this debris
        pass
