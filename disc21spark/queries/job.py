"""make_queries on Spark: scan a library with the binaryFile source, choose on the driver,
alter and write the query images on the executors, write the manifests on the driver.

Two passes over the files: the scan decodes every image once (a truncated file shows only
when decoded; the sizes decide which images can take every test), the second pass reads only
the chosen sources. The driver holds one small row per library file and per query, never
pixels (but for the few thumbnails of the contact sheet).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from disc21spark.core import config
from disc21spark.core.errors import InputError, first_line
from disc21spark.core.output import staged_output
from disc21spark.core.paths import display_path
from disc21spark.core.phases import Phases
from disc21spark.core.runner import BaseJob, fields_from_options
from disc21spark.core.spark import arrow_output, spark_conf
from disc21spark.core.spark_images import (
    ARROW_BATCH,
    image_frame,
    in_tasks,
    listed_files,
    source_frame,
    unreturned,
)
from disc21spark.queries import bench_folder, codec
from disc21spark.queries.spec import (
    Made,
    Scanned,
    Selection,
    Settings,
    by_source,
    make_all,
    query_file,
    scan_one,
    select,
)

# images per task: decoding takes ~3 ms, altering and encoding ~20 ms
SCAN_PER_TASK, ALTER_PER_TASK = 256, 48


@dataclass(frozen=True)
class QueryJob(BaseJob):
    """make-queries; defaults from conf/defaults.ini [make-queries]."""

    INPUTS = ("images",)

    images: list[str]
    output: str
    settings: Settings
    image_partitions: int | None = config.value("make-queries", "image_partitions", int)
    overwrite: bool = False

    @classmethod
    def from_options(cls, request: Any) -> QueryJob:
        """`disc21spark make-queries`: the tests are parsed here, so that a bad one fails
        before Spark starts."""
        from disc21spark.queries.transforms import BadTestSpec, parse_tests

        try:
            tests = tuple(parse_tests(request.tests))
        except BadTestSpec as exc:  # the message names the test: nothing to add
            raise InputError("", str(exc)) from None
        settings = Settings(
            tests=tests,
            per_test=request.queries_per_test,
            distractors=request.distractors,
            seed=request.seed,
            fmt=request.query_format,
            sheet_per_test=request.sheet_per_test,
        )
        return cls(**fields_from_options(cls, request, settings=settings))

    def execute(self, spark: SparkSession) -> dict:
        return run(spark, self)

    def summary(self, document: dict) -> list[str]:
        c, settings = document["counts"], self.settings
        return [
            f"{c['queries']:,} queries ({len(settings.tests)} tests × {settings.per_test:,}, "
            f"{c['distractor_queries']:,} distractors) from {c['library_files']:,} library "
            f"files: {c['references']:,} references, {c['skipped']:,} skipped → "
            f"{Path(self.output)}/"
        ]


SCAN_ARROW, SCAN_SCHEMA = arrow_output(
    [
        ("path", pa.string()),
        ("nbytes", pa.int64()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("sha256", pa.string()),
        ("problem", pa.string()),
    ]
)


def scan(spark: SparkSession, frame: DataFrame) -> list[Scanned]:
    def decode_all(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = [
                scan_one(path, content)
                for path, content in zip(
                    batch.column("path").to_pylist(), batch.column("content").to_pylist()
                )
            ]
            yield pa.RecordBatch.from_pylist([r.__dict__ for r in rows], schema=SCAN_ARROW)

    listed = listed_files(frame)
    frame = in_tasks(spark, frame, len(listed), SCAN_PER_TASK)
    try:
        rows = frame.mapInArrow(decode_all, SCAN_SCHEMA).collect()
    except Exception as exc:
        raise InputError("--images", f"cannot read the library ({first_line(exc)})") from None
    seen = {display_path(r.path) for r in rows}  # file:/x and file:///x alike
    # a file of zero bytes or one that cannot be opened gives no row: it must not vanish
    empty = [Scanned(p, 0, problem=unreturned(p)) for p in listed if display_path(p) not in seen]
    return [Scanned(r.path, r.nbytes, r.width, r.height, r.sha256, r.problem) for r in rows] + empty


MADE_ARROW, MADE_SCHEMA = arrow_output(
    [
        ("query_id", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("nbytes", pa.int64()),
        ("sha256", pa.string()),
        ("params", pa.string()),
        ("original", pa.binary()),
        ("altered", pa.binary()),
        ("data", pa.binary()),
    ]
)


def make_queries(
    spark: SparkSession,
    selection: Selection,
    settings: Settings,
    folder: str,
    partitions: int | None,
) -> list[Made]:
    """Alter the chosen sources on the executors; the driver writes the queries into
    `folder` (its staging folder) as the tasks' results stream back, one partition at a
    time: an executor's disk is not the driver's, and the output may be on any file
    system.

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
            for path, data in zip(
                batch.column("path").to_pylist(), batch.column("content").to_pylist()
            ):
                try:
                    made = make_all(data, plan_of[path], settings)
                except codec.Unreadable as exc:  # the file changed since the scan
                    raise RuntimeError(f"{display_path(path)}: {exc}") from None
                for m, encoded in made:
                    a, b = m.thumbs or (None, None)
                    out.append(
                        {
                            **{k: v for k, v in m.__dict__.items() if k != "thumbs"},
                            "original": a,
                            "altered": b,
                            "data": encoded,
                        }
                    )
            yield pa.RecordBatch.from_pylist(out, schema=MADE_ARROW)

    rows = work.mapInArrow(alter, MADE_SCHEMA).toLocalIterator(prefetchPartitions=True)
    return _write_queries(rows, folder, settings)


def _write_queries(rows: Iterator, folder: str, settings: Settings) -> list[Made]:
    """The driver's side: each query's image written into ``folder`` as its partition
    streams back; what was made, thumbnails for the contact sheet included."""
    made = []
    for r in rows:
        Path(query_file(folder, r.query_id, settings)).write_bytes(r.data)
        made.append(
            Made(
                r.query_id,
                r.width,
                r.height,
                r.nbytes,
                r.sha256,
                r.params,
                (bytes(r.original), bytes(r.altered)) if r.original is not None else None,
            )
        )
    return made


def run(spark: SparkSession, job: QueryJob) -> dict:
    """The whole job; the folder appears complete or not at all."""
    phases = Phases()
    with spark_conf(spark, ARROW_BATCH), staged_output(job.output, job.overwrite) as stage:
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
                    spark, selection, job.settings, str(folder), job.image_partitions
                )
            except Exception as exc:
                raise InputError(
                    "--images", f"making the queries failed: {first_line(exc)}"
                ) from None
            note.update(rows=len(made))
        with phases.phase("write"):
            document = bench_folder.write(stage, job.settings, selection, made, job.images)
    document["seconds"] = phases.seconds
    return document
