"""Image files as Spark rows (path + content): which files a pattern names, read in tasks
sized for Python work. make_queries and extract_descriptors list images the same way."""

from __future__ import annotations

import glob
import os
import re
from urllib.parse import unquote

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from disc21spark.core.errors import InputError, first_line
from disc21spark.core.fs import is_directory
from disc21spark.core.paths import display_path, is_glob
from disc21spark.core.spark import spark_conf, union_all

# what a library may hold; anything else in a folder is not taken for an image
EXTENSIONS = ("jpg", "jpeg", "png", "webp", "bmp", "tif", "tiff", "gif")
IMAGE_FILTER = "*.{" + ",".join(e for x in EXTENSIONS for e in (x, x.upper())) + "}"
# the reason a file of zero bytes is skipped (the binaryFile source returns no row for it)
EMPTY_FILE = "empty file (0 bytes)"


def _tolerant(reader):
    """A file that cannot be opened is skipped, not fatal. Java reports a permission
    denied as FileNotFoundException, which Spark handles as a missing file."""
    return reader.option("ignoreCorruptFiles", "true").option("ignoreMissingFiles", "true")


def unreturned(path: str) -> str:
    """Why the binaryFile source gave no row for a file it listed: it plans no split for
    a file of zero bytes, and skips one it cannot open (``_tolerant``, so that
    one unreadable image is a line of skipped.csv, not the end of the job). Asked again
    here, on the driver."""
    plain = display_path(path)
    if "://" in plain:
        return "empty or unreadable (no content came back)"
    try:
        if os.path.getsize(plain) == 0:
            return EMPTY_FILE
        with open(plain, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return "cannot be read (no content came back)"


def listed_files(frame: DataFrame) -> list[str]:
    """The files a binaryFile frame reads, named as its ``path`` column names them:
    ``inputFiles`` gives URIs (a space is %20), the rows decoded paths."""

    return [unquote(f) for f in frame.inputFiles()]


# rows per Arrow batch: each carries a whole image file (tens of MB for a large photo)
ROWS_PER_BATCH = "16"
ARROW_BATCH = {"spark.sql.execution.arrow.maxRecordsPerBatch": ROWS_PER_BATCH}
# up to this many paths are listed by the driver itself: Spark's parallel listing job
# costs seconds (4.5 s for 500 local files here, against 0.3 s)
DRIVER_LISTING = 20_000


def image_frame(spark: SparkSession, patterns: list[str]) -> DataFrame:
    """path + content of every image file the patterns name.

    A folder is searched recursively for image extensions; ``root/**/*.jpg`` means every
    ``*.jpg`` below root (Hadoop globs have no ``**``); any other glob is Hadoop's.
    """
    frames = []
    for pattern in patterns:
        reader = _tolerant(spark.read.format("binaryFile"))
        root, sep, name = pattern.partition("/**")
        target = pattern
        if sep:
            name = name.lstrip("/") or IMAGE_FILTER
            if "/" in name:
                raise InputError(pattern, "after '**/' give a file pattern only (such as *.jpg)")
            reader = reader.option("recursiveFileLookup", "true").option("pathGlobFilter", name)
            target = root or "."
        elif _is_folder(spark, pattern):
            reader = reader.option("recursiveFileLookup", "true")
            reader = reader.option("pathGlobFilter", IMAGE_FILTER)
        try:
            frame = reader.load(target).select("path", "content")
        except AnalysisException as exc:
            # Spark's own words would only repeat the path
            detail = "" if "PATH_NOT_FOUND" in str(exc) else f" ({first_line(exc)})"
            raise InputError(pattern, f"no such file or folder{detail}") from None
        frames.append(frame)
    union = union_all(frames)
    return union.dropDuplicates(["path"]) if len(frames) > 1 else union


def _is_folder(spark: SparkSession, path: str) -> bool:
    if is_glob(path):
        return False
    try:
        return is_directory(spark, path)
    except Exception:  # a missing path is reported by the read, in one line
        return False


def in_tasks(spark: SparkSession, frame: DataFrame, items: int, per_task: int) -> DataFrame:
    """Fewer, larger tasks: file splits are sized for big files (a few images each), and a
    Python task costs tens of milliseconds to start whatever it does."""
    parallelism = spark.sparkContext.defaultParallelism
    target = max(2 * parallelism, -(-items // per_task))
    current = frame.rdd.getNumPartitions()
    return frame.coalesce(target) if target < current else frame


def source_frame(spark: SparkSession, paths: list[str]) -> DataFrame:
    """path + content of exactly these files (the paths as the scan reported them)."""
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    listing = {key: str(max(32, len(paths) + 1))} if len(paths) <= DRIVER_LISTING else {}
    with spark_conf(spark, listing):
        # a path is read as a glob pattern: its metacharacters must stand for themselves
        escaped = [re.sub(r"([\\*?\[\]{}])", r"\\\1", p) for p in paths]
        reader = _tolerant(spark.read.format("binaryFile"))
        try:
            return reader.load(escaped).select("path", "content")
        except AnalysisException as exc:  # a file named (in a bench's tables) is gone
            gone = [
                p
                for p in paths
                if "://" not in display_path(p) and not os.path.exists(display_path(p))
            ]
            if gone:
                raise InputError(display_path(gone[0]), "no such file") from None
            raise InputError("images", f"cannot be listed ({first_line(exc)})") from None


def local_paths(patterns: list[str]) -> list[str]:
    """The same files as image_frame, for the single-process baseline (local files only)."""

    found: set[str] = set()
    for pattern in patterns:
        if os.path.isdir(pattern):
            pattern = os.path.join(pattern, "**", "*")
        for p in glob.glob(pattern, recursive=True):
            if os.path.isfile(p) and p.rsplit(".", 1)[-1].lower() in EXTENSIONS:
                found.add(os.path.abspath(p))
    return sorted(found)
