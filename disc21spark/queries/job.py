"""make_queries on Spark: scan a library with the binaryFile source, choose on the driver,
alter and write the query images on the executors, write the manifests on the driver.

Two passes over the files: the scan decodes every image once (a truncated file shows only
when decoded; the sizes decide which images can take every test), the second pass reads only
the chosen sources. The driver holds one small row per library file and per query, never
pixels (but for the few thumbnails of the contact sheet).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from disc21spark.core.errors import InputError, display_path, first_line
from disc21spark.core.output import check_writable, staged_output
from disc21spark.core.phases import Phases
from disc21spark.matching.read import is_directory
from disc21spark.queries import bench_folder as benchset
from disc21spark.queries import codec as images
from disc21spark.queries.spec import (
    Made,
    Scanned,
    Selection,
    Settings,
    by_source,
    make_all,
    scan_one,
    select,
)

# rows per Arrow batch: each carries a whole image file (tens of MB for a large photo)
ROWS_PER_BATCH = "16"
# images per task: decoding takes ~3 ms, altering and encoding ~20 ms
SCAN_PER_TASK, ALTER_PER_TASK = 256, 48
IMAGE_FILTER = "*.{" + ",".join(e for x in images.EXTENSIONS for e in (x, x.upper())) + "}"


@dataclass(frozen=True)
class QueryJob:
    images: list[str]
    output: str
    settings: Settings
    partitions: int | None = None
    overwrite: bool = False


def image_frame(spark: SparkSession, patterns: list[str]) -> DataFrame:
    """path + content of every image file the patterns name.

    A folder is searched recursively for image extensions; ``root/**/*.jpg`` means every
    ``*.jpg`` below root (Hadoop globs have no ``**``); any other glob is Hadoop's.
    """
    frames = []
    for pattern in patterns:
        reader = spark.read.format("binaryFile")
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
            raise InputError(pattern, f"no such file or folder ({first_line(exc)})") from None
        frames.append(frame)
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union.dropDuplicates(["path"]) if len(frames) > 1 else union


def _is_folder(spark: SparkSession, path: str) -> bool:
    if any(c in path for c in "*?[{"):
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


# up to this many paths are listed by the driver itself: Spark's parallel listing job
# costs seconds (4.5 s for 500 local files here, against 0.3 s)
DRIVER_LISTING = 20_000


def source_frame(spark: SparkSession, paths: list[str]) -> DataFrame:
    """path + content of exactly these files (the paths as the scan reported them)."""
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    previous = spark.conf.get(key)
    if len(paths) <= DRIVER_LISTING:
        spark.conf.set(key, str(max(32, len(paths) + 1)))
    try:
        # a path is read as a glob pattern: its metacharacters must stand for themselves
        escaped = [re.sub(r"([\\*?\[\]{}])", r"\\\1", p) for p in paths]
        return spark.read.format("binaryFile").load(escaped).select("path", "content")
    finally:
        spark.conf.set(key, previous)


SCAN_SCHEMA = "path string, nbytes long, width int, height int, sha256 string, problem string"


def scan(spark: SparkSession, frame: DataFrame) -> list[Scanned]:
    def decode_all(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = [
                scan_one(path, content)
                for path, content in zip(
                    batch.column("path").to_pylist(), batch.column("content").to_pylist()
                )
            ]
            yield pa.RecordBatch.from_pylist(
                [r.__dict__ for r in rows], schema=_SCAN_ARROW
            )

    frame = in_tasks(spark, frame, len(frame.inputFiles()), SCAN_PER_TASK)
    try:
        rows = frame.mapInArrow(decode_all, SCAN_SCHEMA).collect()
    except Exception as exc:
        raise InputError("--images", f"cannot read the library ({first_line(exc)})") from None
    return [
        Scanned(r.path, r.nbytes, r.width, r.height, r.sha256, r.problem) for r in rows
    ]


_SCAN_ARROW = pa.schema(
    [("path", pa.string()), ("nbytes", pa.int64()), ("width", pa.int32()),
     ("height", pa.int32()), ("sha256", pa.string()), ("problem", pa.string())]
)  # fmt: skip
MADE_SCHEMA = (
    "query_id string, width int, height int, nbytes long, sha256 string, params string, "
    "original binary, altered binary"
)
_MADE_ARROW = pa.schema(
    [("query_id", pa.string()), ("width", pa.int32()), ("height", pa.int32()),
     ("nbytes", pa.int64()), ("sha256", pa.string()), ("params", pa.string()),
     ("original", pa.binary()), ("altered", pa.binary())]
)  # fmt: skip


def make_queries(
    spark: SparkSession,
    selection: Selection,
    settings: Settings,
    folder: str,
    partitions: int | None,
) -> list[Made]:
    """Alter the chosen sources on the executors; each task writes its queries to `folder`.

    Each source file travels and is decoded once, whatever the number of tests: its
    queries are looked up by path in the plan shipped with the function (a small dict).
    """
    plans = by_source(selection.queries)
    work = source_frame(spark, sorted(plans))
    if partitions:
        work = work.repartition(partitions)
    else:
        work = in_tasks(spark, work, len(selection.queries), ALTER_PER_TASK)
    shipped = spark.sparkContext.broadcast(plans)

    def alter(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan_of = shipped.value
        for batch in batches:
            out = []
            for path, data in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist()):
                try:
                    made = make_all(data, plan_of[path], settings, folder)
                except images.Unreadable as exc:  # the file changed since the scan
                    raise RuntimeError(f"{display_path(path)}: {exc}") from None
                for m in made:
                    a, b = m.thumbs or (None, None)
                    out.append({**{k: v for k, v in m.__dict__.items() if k != "thumbs"},
                                "original": a, "altered": b})  # fmt: skip
            yield pa.RecordBatch.from_pylist(out, schema=_MADE_ARROW)

    rows = work.mapInArrow(alter, MADE_SCHEMA).collect()
    return [
        Made(
            r.query_id, r.width, r.height, r.nbytes, r.sha256, r.params,
            (bytes(r.original), bytes(r.altered)) if r.original is not None else None,
        )  # fmt: skip
        for r in rows
    ]


def run(spark: SparkSession, job: QueryJob) -> dict:
    """The whole job; the folder appears complete or not at all."""
    phases = Phases()
    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", ROWS_PER_BATCH)
    try:
        with staged_output(job.output, job.overwrite) as stage:
            with phases.phase("scan") as note:
                scanned = scan(spark, image_frame(spark, job.images))
                if not scanned:
                    raise InputError(" ".join(job.images), "no image files found")
                bad = sum(1 for s in scanned if s.problem)
                note.update(rows=len(scanned), detail=f"{bad:,} unreadable")
            with phases.phase("select") as note:
                selection = select(scanned, job.settings)
                note.update(rows=len(selection.queries))
            with phases.phase("alter") as note:
                folder = stage / "queries"
                folder.mkdir()
                try:
                    made = make_queries(
                        spark, selection, job.settings, str(folder), job.partitions
                    )
                except Exception as exc:
                    raise InputError("--images", f"making the queries failed: {first_line(exc)}") from None
                note.update(rows=len(made))
            with phases.phase("write"):
                document = benchset.write(stage, job.settings, selection, made, job.images)
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)
    document["seconds"] = phases.seconds
    return document


def make_cli(args) -> dict:
    """jobs/make_queries.py's call."""
    from disc21spark.core.session import spark_session
    from disc21spark.queries.transforms import parse_tests

    settings = Settings(
        tests=tuple(parse_tests(args.tests)),
        per_test=args.queries_per_test,
        distractors=args.distractors,
        seed=args.seed,
        fmt=args.format,
        sheet_per_test=args.sheet_per_test,
    )
    job = QueryJob(args.images, args.output, settings, args.partitions, args.overwrite)
    check_writable(job.output, job.overwrite)
    spark = spark_session(args.profile, args.master, debug=args.debug)
    document = run(spark, job)
    c = document["counts"]
    print(
        f"{c['queries']:,} queries ({len(settings.tests)} tests × {settings.per_test:,}, "
        f"{c['distractor_queries']:,} distractors) from {c['library_files']:,} library files: "
        f"{c['references']:,} references, {c['skipped']:,} skipped → {Path(job.output)}/"
    )
    return document


def local_paths(patterns: list[str]) -> list[str]:
    """The same files as image_frame, for the single-process baseline (local files only)."""
    import glob

    found: set[str] = set()
    for pattern in patterns:
        if os.path.isdir(pattern):
            pattern = os.path.join(pattern, "**", "*")
        for p in glob.glob(pattern, recursive=True):
            if os.path.isfile(p) and p.rsplit(".", 1)[-1].lower() in images.EXTENSIONS:
                found.add(os.path.abspath(p))
    return sorted(found)
