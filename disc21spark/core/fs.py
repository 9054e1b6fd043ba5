"""Any path Spark can read, through the Hadoop FileSystem API of the running session:
listing (a file, a folder or a glob), kind, size, SHA-256, copies, Parquet; the files
of a run (``LocalFiles``, ``SparkFiles``).
What a path's text says (scheme, glob, suffix) is ``core/paths.py``'s.

A plain path (``out/``, ``/data/gt.csv``) is this machine's file system and is handled
with the standard library: the in-process engine and ``--help`` need no JVM. A URI
(``file:///x``, ``hdfs://nn/x``, ``s3a://bucket/x``, ``gs://``, ``abfs://``) goes through
the file system Hadoop has for its scheme, wherever the cluster has the connector.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from disc21spark.core.errors import InputError, OutputError, failure_texts, first_line
from disc21spark.core.paths import is_uri, scheme

if TYPE_CHECKING:  # the in-process engine uses this module without importing PySpark
    from pyspark.sql import SparkSession

SUCCESS = "_SUCCESS"
# Hadoop's connector artefacts for the schemes users ask for most
CONNECTORS = {
    "s3a": "the hadoop-aws package (--packages org.apache.hadoop:hadoop-aws:<Hadoop version>)",
    "s3": "the hadoop-aws package and the s3a:// scheme",
    "gs": "the GCS connector (gcs-connector-hadoop3 jar)",
    "abfs": "the hadoop-azure package (--packages org.apache.hadoop:hadoop-azure:<version>)",
    "abfss": "the hadoop-azure package (--packages org.apache.hadoop:hadoop-azure:<version>)",
    "wasbs": "the hadoop-azure package",
}


class LocalFiles:
    """The files of a run without Spark: plain paths on this machine (a URI is not
    listed). The runner and the engines hand one of these (or ``SparkFiles``) down, so
    that no caller tells the two apart by a session that is None."""

    name = "local"
    spark: Any = None

    def describe(self) -> dict[str, Any]:
        """The engine part of a run document."""
        return dict.fromkeys(("spark_application_id", "spark_master", "spark_version")) | {
            "engine": self.name
        }

    def listed(self, path: str) -> list[str] | None:
        """The files a path stands for (a file, a folder's files, a glob's), sorted; None
        when there are none, or for a URI this run cannot list."""
        if is_uri(path):
            return None
        if os.path.isfile(path):
            return [path]
        if os.path.isdir(path):
            return sorted(str(p) for p in Path(path).rglob("*") if p.is_file())
        found = sorted(f for f in glob.glob(path, recursive=True) if os.path.isfile(f))
        return found or None

    def size(self, path: str) -> int:
        """Bytes of one listed file."""
        return os.path.getsize(path)

    def stop(self) -> None:
        """Release what the run started (nothing, here)."""


class SparkFiles(LocalFiles):
    """The files of a run on Spark: URIs too, through the session's Hadoop file systems."""

    name = "spark"

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def describe(self) -> dict[str, Any]:
        sc = self.spark.sparkContext
        return {
            "engine": self.name,
            "spark_application_id": sc.applicationId,
            "spark_master": sc.master,
            "spark_version": self.spark.version,
        }

    def listed(self, path: str) -> list[str] | None:
        if not is_uri(path):
            return super().listed(path)
        try:
            return data_files(self.spark, path)
        except Exception:  # an input the job itself reports on
            return None

    def size(self, path: str) -> int:
        if not is_uri(path):
            return super().size(path)
        where = HadoopPath(self.spark, path)
        return int(where.fs.getFileStatus(where.path).getLen())

    def stop(self) -> None:
        """Stop Spark; the JVM may be going down already (under spark-submit a signal
        reaches it first), which is no reason to print a trace."""
        try:
            self.spark.stop()
        except Exception:  # a JVM already gone is the expected case
            pass


def files_of(engine: str, spark: Any = None) -> LocalFiles:
    """The files of a run on ``engine`` as the decision named it (``engine.Choice.engine``:
    "spark", with its session, or "local")."""
    return SparkFiles(spark) if engine == "spark" else LocalFiles()


def serving() -> LocalFiles:
    """The files of a library call that was handed none: the running SparkSession's, or
    this machine's alone."""
    spark = active_session()
    return SparkFiles(spark) if spark else LocalFiles()


def active_session() -> Any:
    """The running SparkSession, or None (plain paths need none)."""

    sql = sys.modules.get("pyspark.sql")
    return sql.SparkSession.getActiveSession() if sql is not None else None


def session_for(path: str, error: type[Exception]) -> Any:
    """The running SparkSession that serves a URI, or ``error`` saying to use Spark."""
    spark = active_session()
    if spark:
        return spark
    why = "a URI is read through Spark's file systems; run with the Spark engine"
    # InputError names its file apart; OutputError is one message
    raise error(path, why) if error is InputError else error(f"{path}: {why}")


def hadoop_path(jvm: Any, *parts: Any) -> Any:
    """A Hadoop ``Path`` of ``parts`` (a URI; or a parent Path and a child's name). The
    class is looked up by its whole name, one py4j call (attribute by attribute, each
    package on the way is a call of its own)."""
    return getattr(jvm, "org.apache.hadoop.fs.Path")(*parts)


class HadoopPath:
    """One path and the Hadoop FileSystem that serves it."""

    def __init__(self, spark: Any, path: str, error: type[Exception] = InputError) -> None:
        self.text = path
        self.jvm = spark.sparkContext._jvm
        self.path = hadoop_path(self.jvm, path)
        try:
            self.fs = self.path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        except Exception as exc:
            raise failure(path, exc, error) from None

    def child(self, name: str) -> Any:
        return hadoop_path(self.jvm, self.path, name)

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
    if (
        "No FileSystem for scheme" in text
        or "UnsupportedFileSystemException" in text
        or missing_class
    ):
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


def is_directory(spark: SparkSession, path: str) -> bool:
    """Whether an existing path (no glob) is a folder, on any Hadoop file system."""
    return HadoopPath(spark, path).is_dir()


def data_files(spark: SparkSession, path: str) -> list[str]:
    """The files a path (file, folder or glob) stands for; an InputError when there are none."""
    return list(sized_files(spark, path))


def sized_files(spark: SparkSession, path: str) -> dict[str, int]:
    """``data_files`` with each file's size in bytes (from the same listing), in order."""
    try:
        where = HadoopPath(spark, path)
        fs = where.fs
        statuses = fs.globStatus(where.path) or []
        files: dict[str, int] = {}
        for status in statuses:
            if status.isDirectory():
                for child in fs.listStatus(status.getPath()) or []:
                    name = child.getPath().getName()
                    if child.isFile() and not name.startswith(("_", ".")):
                        files[child.getPath().toString()] = int(child.getLen())
            else:
                files[status.getPath().toString()] = int(status.getLen())
    except InputError:  # the file system itself (a scheme without its connector)
        raise
    except Exception as exc:  # any filesystem failure is the user's path, not our bug
        raise failure(path, exc) from None
    if not statuses:
        raise InputError(path, "no such file or directory")
    if not files:
        raise InputError(path, "folder holds no data file")
    return dict(sorted(files.items()))


def uri(spark: SparkSession, path: str) -> str:
    """A path as Spark names a row's file (``_metadata.file_path``): its URI, encoded."""
    return hadoop_path(spark.sparkContext._jvm, path).toUri().toString()


def sha256(path: str, spark: Any = None) -> str:
    """SHA-256 of a file's bytes, streamed (any size; never the whole file in memory)."""
    if not is_uri(path):
        try:
            with open(path, "rb") as fh:
                return hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError as exc:
            raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    spark = spark or session_for(path, InputError)
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
    spark = spark or session_for(path, InputError)
    where = HadoopPath(spark, path)
    target = folder / str(where.path.getName())
    try:
        local = hadoop_path(where.jvm, target.as_uri())
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
    spark = spark or session_for(path, InputError)
    where = HadoopPath(spark, path)
    try:
        return where.exists()
    except Exception as exc:
        raise failure(path, exc, InputError) from None


def read_ends(
    path: str, head: int, tail: int, spark: Any = None
) -> tuple[int, bytes, bytes] | None:
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
        where = HadoopPath(spark or session_for(path, InputError), path)
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
