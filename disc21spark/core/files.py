"""Paths on any Hadoop file system (local, hdfs://, s3a://...): listing, kind and Parquet.

Every failure is the user's path, so each is an InputError naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from disc21spark.core import damage
from disc21spark.core.errors import InputError, first_line
from disc21spark.core.fs import HadoopPath
from disc21spark.core.fs import failure as fs_failure

if TYPE_CHECKING:  # the in-process engine uses detect_format without importing PySpark
    from pyspark.sql import DataFrame, SparkSession

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")


def detect_format(path: str, fmt: str = "auto") -> str:
    """csv (also .csv.gz and any Hadoop codec) or parquet, from the name unless given."""
    if fmt != "auto":
        return fmt
    stripped = path.rstrip("/")
    return "parquet" if stripped.lower().endswith(PARQUET_SUFFIXES) else "csv"


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
        raise fs_failure(path, exc) from None
    if not statuses:
        raise InputError(path, "no such file or directory")
    if not files:
        raise InputError(path, "folder holds no data file")
    return dict(sorted(files.items()))


def read_parquet(spark: SparkSession, path: str | list[str], columns: tuple[str, ...]) -> DataFrame:
    """Parquet files or folders holding (at least) the given columns."""
    paths = [path] if isinstance(path, str) else list(path)
    name = ", ".join(paths)
    try:
        df = spark.read.parquet(*paths)
    except Exception as exc:  # not Parquet, or a damaged footer: the words of core/damage.py
        reason = damage.unreadable(paths[0], exc, "parquet", spark) if len(paths) == 1 else None
        raise InputError(name, reason or f"cannot be read ({first_line(exc)})") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(name, f"missing column {missing[0]!r} (has: {', '.join(df.columns)})")
    return df
