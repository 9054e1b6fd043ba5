"""Any path Spark can read, through the Hadoop FileSystem API of the running session.

A plain path (``out/``, ``/data/gt.csv``) is this machine's file system and is handled
with the standard library: the in-process engine and ``--help`` need no JVM. A URI
(``file:///x``, ``hdfs://nn/x``, ``s3a://bucket/x``, ``gs://``, ``abfs://``) goes through
the file system Hadoop has for its scheme, wherever the cluster has the connector.

Outputs are written into a staging folder on this machine, copied beside the target and
renamed onto it at the end, with a ``_SUCCESS`` marker. On HDFS and local disks the final
rename is atomic: readers see the old folder or the new one. Object stores (S3, GCS,
Azure) have no folder rename: Hadoop copies object by object, so a reader may briefly
see a partial folder; ``_SUCCESS`` is written into the staging folder first and is the
sign that a folder is complete.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from disc21spark.core.errors import InputError, OutputError, failure_texts, first_line

SUCCESS = "_SUCCESS"
GLOB_CHARACTERS = "*?[{"
# the codecs Hadoop's CompressionCodecFactory picks by a file's suffix
HADOOP_CODECS = (".gz", ".bz2", ".zst", ".lz4", ".snappy", ".deflate")
# a scheme of two letters or more: "C:" is a Windows drive, not a file system
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
# Hadoop's connector artefacts for the schemes users ask for most
CONNECTORS = {
    "s3a": "the hadoop-aws package (--packages org.apache.hadoop:hadoop-aws:<Hadoop version>)",
    "s3": "the hadoop-aws package and the s3a:// scheme",
    "gs": "the GCS connector (gcs-connector-hadoop3 jar)",
    "abfs": "the hadoop-azure package (--packages org.apache.hadoop:hadoop-azure:<version>)",
    "abfss": "the hadoop-azure package (--packages org.apache.hadoop:hadoop-azure:<version>)",
    "wasbs": "the hadoop-azure package",
}


def scheme(path: str) -> str | None:
    """The URI scheme of a path (``s3a``), or None for a plain local path."""
    found = _SCHEME.match(str(path))
    return found.group(1).lower() if found else None


def is_uri(path: str) -> bool:
    return scheme(path) is not None


def is_glob(path: str) -> bool:
    """Whether Hadoop's globbing would expand the path (``*``, ``?``, ``[...]``, ``{a,b}``)."""
    return any(c in path for c in GLOB_CHARACTERS)


def active_session() -> Any:
    """The running SparkSession, or None (plain paths need none)."""
    import sys

    sql = sys.modules.get("pyspark.sql")
    return sql.SparkSession.getActiveSession() if sql is not None else None


def _session(path: str, error: type[Exception]) -> Any:
    spark = active_session()
    if spark:
        return spark
    raise error(f"{path}: a URI is read through Spark's file systems; run with the Spark engine")


class HadoopPath:
    """One path and the Hadoop FileSystem that serves it."""

    def __init__(self, spark: Any, path: str, error: type[Exception] = InputError) -> None:
        self.text = path
        self.jvm = spark.sparkContext._jvm
        self.path = self.jvm.org.apache.hadoop.fs.Path(path)
        try:
            self.fs = self.path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        except Exception as exc:
            raise failure(path, exc, error) from None

    def child(self, name: str) -> Any:
        return self.jvm.org.apache.hadoop.fs.Path(self.path, name)

    def exists(self, path: Any = None) -> bool:
        return bool(self.fs.exists(path or self.path))

    def is_dir(self, path: Any = None) -> bool:
        return bool(self.fs.getFileStatus(path or self.path).isDirectory())

    def is_empty_dir(self) -> bool:
        return len(self.fs.listStatus(self.path)) == 0


def failure(path: str, exc: BaseException, error: type[Exception] = InputError) -> Exception:
    """The one-line error of a file system call that failed on ``path``."""
    text = first_line(exc)
    kind = scheme(path)
    # Hadoop knows some schemes (s3a) by class name and fails on loading the class
    missing_class = "ClassNotFoundException" in text and "FileSystem" in text
    if "No FileSystem for scheme" in text or "UnsupportedFileSystemException" in text or missing_class:
        hint = CONNECTORS.get(kind or "", "its Hadoop connector on the classpath")
        message = f"no FileSystem for scheme '{kind}': add {hint}"
    elif error is OutputError:
        message = f"cannot be written ({text})"
    else:
        message = f"cannot be read ({text})"
    return (
        error(f"{path}: {message}")
        if error is OutputError
        else error(path, message)  # InputError(source, reason)
    )


def sha256(path: str, spark: Any = None) -> str:
    """SHA-256 of a file's bytes, streamed (any size; never the whole file in memory)."""
    if not is_uri(path):
        try:
            with open(path, "rb") as fh:
                return hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError as exc:
            raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    spark = spark or _session(path, InputError)
    where = HadoopPath(spark, path)
    try:
        stream = where.fs.open(where.path)
        try:
            # commons-codec ships with Spark: the bytes are digested in the JVM as they
            # stream, none of them cross into Python
            return where.jvm.org.apache.commons.codec.digest.DigestUtils.sha256Hex(stream)
        finally:
            stream.close()
    except Exception as exc:
        raise failure(path, exc, InputError) from None


def files_digest(sums: list[tuple[str, str]]) -> str:
    """One SHA-256 for several files: of their names and digests, in the order given (a
    folder's or a glob's files, sorted)."""
    digest = hashlib.sha256()
    for name, sha in sums:
        digest.update(f"{name.rstrip('/').rsplit('/', 1)[-1]}\0{sha}\n".encode())
    return digest.hexdigest()


def copy_to(path: str, folder: Path, spark: Any = None) -> Path:
    """Copy a file of any file system into a local folder (same name); the copy's path."""
    spark = spark or _session(path, InputError)
    where = HadoopPath(spark, path)
    target = folder / str(where.path.getName())
    try:
        local = where.jvm.org.apache.hadoop.fs.Path(target.as_uri())
        where.fs.copyToLocalFile(False, where.path, local, True)
    except Exception as exc:
        raise failure(path, exc, InputError) from None
    return target


@contextmanager
def local_copy(path: str, spark: Any = None) -> Iterator[str]:
    """A file on this machine with the bytes of ``path`` (itself when already local), for
    the readers that need one; the copy is removed at the end."""
    if not is_uri(path):
        yield path
        return
    folder = Path(tempfile.mkdtemp(prefix="disc21spark-in-"))
    try:
        yield str(copy_to(path, folder, spark))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_text(path: str, spark: Any = None) -> str:
    """A small text file (a previous leaderboard, a manifest) from any file system."""
    if not is_uri(path):
        return Path(path).read_text(encoding="utf-8")
    with local_copy(path, spark) as plain:
        return Path(plain).read_text(encoding="utf-8")


def exists(path: str, spark: Any = None) -> bool:
    if not is_uri(path):
        return Path(path).exists()
    spark = spark or _session(path, InputError)
    where = HadoopPath(spark, path)
    try:
        return where.exists()
    except Exception as exc:
        raise failure(path, exc, InputError) from None


def check_writable_uri(path: str, overwrite: bool, spark: Any = None) -> None:
    """The checks of ``output.check_writable`` for a URI target."""
    spark = spark or _session(path, OutputError)
    where = HadoopPath(spark, path, OutputError)
    try:
        if where.exists():
            if not where.is_dir():
                raise OutputError(f"{path}: exists and is not a folder")
            if not overwrite and not where.is_empty_dir():
                raise OutputError(
                    f"{path}: folder exists and is not empty (pass --overwrite to replace it)"
                )
        parent = where.path.getParent()
        # object stores have no folders to create: only a real file system needs a parent
        if parent is not None and scheme(path) in ("file", "hdfs") and not where.exists(parent):
            raise OutputError(f"{parent.toString()}: parent folder does not exist")
    except OutputError:
        raise
    except Exception as exc:
        raise failure(path, exc, OutputError) from None


@contextmanager
def staged_uri_output(path: str, overwrite: bool) -> Iterator[Path]:
    """``output.staged_output`` for a URI: write here, then copy beside the target and
    rename onto it (see the module's note on object stores)."""
    spark = _session(path, OutputError)
    check_writable_uri(path, overwrite, spark)
    local = Path(tempfile.mkdtemp(prefix="disc21spark-out-"))
    try:
        yield local
        (local / SUCCESS).write_bytes(b"")
        commit(spark, local, path, overwrite)
    finally:
        shutil.rmtree(local, ignore_errors=True)


def commit(spark: Any, local: Path, path: str, overwrite: bool) -> None:
    """Copy the finished folder ``local`` beside ``path`` and rename it onto ``path``."""
    where = HadoopPath(spark, path, OutputError)
    Path_ = where.jvm.org.apache.hadoop.fs.Path
    parent = where.path.getParent()
    token = uuid.uuid4().hex[:8]
    staging = Path_(parent, f".{where.path.getName()}.staging-{token}")
    old = Path_(parent, f".{where.path.getName()}.old-{token}")
    try:
        where.fs.copyFromLocalFile(False, True, Path_(local.as_uri()), staging)
        check_writable_uri(path, overwrite, spark)  # someone may have written there meanwhile
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
        raise failure(path, exc, OutputError) from None
    except BaseException:  # a signal: no staging folder left behind
        _remove(where, staging)
        raise


def _remove(where: HadoopPath, path: Any) -> None:
    try:
        if where.fs.exists(path):
            where.fs.delete(path, True)
    except Exception:  # the error being reported matters more than this debris
        pass


def read_ends(path: str, head: int, tail: int, spark: Any = None) -> tuple[int, bytes, bytes] | None:
    """(size, the first ``head`` bytes, the last ``tail`` bytes) of one file on any file
    system; None when ``path`` is no single file or cannot be read (the caller keeps the
    words it has)."""
    if not is_uri(path):
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                first = fh.read(head)
                fh.seek(max(size - tail, 0))
                return size, first, fh.read(tail)
        except OSError:
            return None
    try:
        where = HadoopPath(spark or _session(path, InputError), path)
        size = int(where.fs.getFileStatus(where.path).getLen())
        if where.is_dir():
            return None
        stream = where.fs.open(where.path)
        try:
            first = bytes(stream.readNBytes(head))
            stream.seek(max(size - tail, 0))
            return size, first, bytes(stream.readNBytes(tail))
        finally:
            stream.close()
    except Exception:  # a folder, a glob, a vanished file: no ends to tell
        return None


# what Hadoop raises when create(overwrite=False) finds the file (HDFS: also while
# another client is creating it)
_EXISTS = ("FileAlreadyExistsException", "AlreadyBeingCreatedException")


def create_new(where: HadoopPath, data: bytes) -> bool:
    """Write ``data`` into a new file at ``where``, unless a file is there: False then.
    On HDFS the check and the create are one step of the name node (atomic); object
    stores have no such step (S3A looks, then writes). Raises OutputError for any other
    failure."""
    try:
        stream = where.fs.create(where.path, False)
    except Exception as exc:
        if any(name in text for text in failure_texts(exc) for name in _EXISTS):
            return False
        raise failure(where.text, exc, OutputError) from None
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()
    return True


def read_small(where: HadoopPath, limit: int = 65536) -> tuple[bytes, float] | None:
    """(its first ``limit`` bytes, its modification time in seconds) of a small file at
    ``where``; None when there is none (or it vanished meanwhile)."""
    try:
        modified = int(where.fs.getFileStatus(where.path).getModificationTime()) / 1000
        stream = where.fs.open(where.path)
        try:
            return bytes(stream.readNBytes(limit)), modified
        finally:
            stream.close()
    except Exception as exc:
        if any("FileNotFoundException" in text for text in failure_texts(exc)):
            return None
        raise failure(where.text, exc, OutputError) from None
