"""Which submissions a pool holds: their names, files, sizes and content checksums.

A pool is a glob, a folder or several paths (one file = one submission, named by its
file name without extension), or one Parquet table with a submission column.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import PurePosixPath

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core import paths, record
from disc21spark.core.errors import InputError
from disc21spark.core.paths import PARQUET_SUFFIXES, display_path

SUFFIXES = (".csv", ".txt", *PARQUET_SUFFIXES, *paths.HADOOP_CODECS)


def submission_name(file: str) -> str:
    """'pool/team_a.csv.gz' -> 'team_a'."""
    name = PurePosixPath(display_path(file)).name
    while name.lower().endswith(SUFFIXES):
        name = name[: name.rfind(".")]
    return name


def named_files(files: Sequence[tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """Submission name -> (file, size in bytes) of the listed ``(file, size)``, by name;
    names must be unique (InputError)."""
    found: dict[str, tuple[str, int]] = {}
    for file, size in files:
        name = submission_name(file)
        if name in found and found[name][0] != file:
            raise InputError(
                display_path(file),
                f"two submissions would be named {name!r} (also {display_path(found[name][0])})",
            )
        found[name] = (file, size)
    return dict(sorted(found.items()))


def file_checksums(spark: SparkSession, files: list[str]) -> dict[str, str]:
    """SHA-256 of each file's bytes, streamed through its file system (any size, any
    Hadoop path); a few files at a time, as the digests run in the JVM or in hashlib,
    both outside Python's lock."""
    with ThreadPoolExecutor(max_workers=4) as threads:
        sums = list(threads.map(lambda f: record.sha256(f, spark), files))
    return dict(zip(files, sums))


def table_checksums(table: DataFrame, column: str) -> dict[str, str]:
    """Per submission of a table: an order-free digest of its rows (a permutation of the
    rows cannot change any metric, so it must not change the checksum)."""
    h = F.xxhash64("query_id", "reference_id", F.col("score").cast("string"))
    rows = (
        table.groupBy(F.col(column).cast("string").alias("name"))
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.bit_xor(h).alias("x"),
            F.sum(F.pmod(h, F.lit(2**31 - 1))).alias("s"),
        )
        .collect()
    )
    return {r["name"]: f"rows:{r['n']}:{r['x']:x}:{r['s']:x}" for r in rows}
