"""make_library on Spark: the executors render the images, the driver writes them and the manifest.

Each image is a function of (seed, index, size) alone, so the folder is byte-identical
whatever the partitioning.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import SparkSession

from disc21spark.core import config
from disc21spark.core.errors import InputError
from disc21spark.core.output import staged_output
from disc21spark.core.phases import Phases
from disc21spark.core.runner import BaseJob, fields_from_options
from disc21spark.library import images
from disc21spark.queries import codec

ITEMS_PER_TASK = 64


@dataclass(frozen=True)
class LibraryJob(BaseJob):
    """make-library; defaults from conf/defaults.ini [make-library]."""

    output: str
    size: int
    seed: int = config.value("make-library", "seed", int)
    width: int = config.value("make-library", "width", int)
    height: int = config.value("make-library", "height", int)
    leaves: str = config.value("make-library", "leaves", str)
    photos: bool = True
    overwrite: bool = False

    @classmethod
    def from_options(cls, request: Any) -> LibraryJob:
        return cls(**fields_from_options(cls, request, photos=not request.no_photos))

    def check(self) -> None:
        """The plan checks every argument (size, seed, dimensions) before Spark starts."""
        try:
            images.library_plan(self.size, self.seed, self.width, self.height, self.photos)
        except ValueError as exc:  # its message names the option and the value
            raise InputError("", str(exc)) from None
        if self.leaves not in images.LEAVES:
            raise InputError(
                "--leaves", f"'{self.leaves}' is not one of {', '.join(images.LEAVES)}"
            )
        if self.leaves == "textured":
            try:
                images.patch_sources()
            except RuntimeError as exc:
                raise InputError("--leaves textured", str(exc)) from None

    def execute(self, spark: SparkSession) -> dict:
        return run(spark, self)

    def summary(self, document: dict) -> list[str]:
        return [
            f"{self.size:,} images ({document['photos']} photographs, "
            f"{document['deadleaves']:,} {self.leaves} dead leaves {self.width}×{self.height}) → "
            f"{Path(self.output)}/"
        ]


def _about(leaves: str) -> str:
    low, high = images.SCENE_SOURCES
    fill = (
        f"each leaf a window of one of {low}-{high} shipped photographs per image, each "
        "photograph owning a region of the frame"
        if leaves == "textured"
        else "one random palette per image"
    )
    return (
        f"scikit-image's shipped photographs, then dead-leaves images (Lee, Mumford & Huang "
        f"2001; {fill}), JPEG quality {images.JPEG_QUALITY}"
    )


def _versions() -> dict:
    import numpy
    import PIL

    return {"pillow": PIL.__version__, "numpy": numpy.__version__}


def run(spark: SparkSession, job: LibraryJob) -> dict:
    phases = Phases()
    items = images.library_plan(job.size, job.seed, job.width, job.height, job.photos)
    with staged_output(job.output, job.overwrite) as stage:
        for folder in {os.path.dirname(i.name) for i in items}:
            (stage / folder).mkdir(parents=True, exist_ok=True)
        written = _render(spark, job, items, stage, phases)
        manifest = (
            pd.DataFrame(
                [(i.name, i.kind, i.index, i.source) for i in items],
                columns=["file", "kind", "index", "source"],
            )
            .merge(written.rename(columns={"name": "file"}), on="file")
            .sort_values("file", kind="stable")
        )
        manifest.to_csv(stage / "library.csv", index=False)
        document = {
            "size": job.size,
            "seed": job.seed,
            "width": job.width,
            "height": job.height,
            "photos": int((manifest.kind == "photo").sum()),
            "deadleaves": int((manifest.kind == "deadleaves").sum()),
            "leaves": job.leaves,
            "about": _about(job.leaves),
        }
        if job.leaves == "textured":
            document["patch_sources"] = list(images.patch_sources().names)
            document["scene_sources"] = list(images.SCENE_SOURCES)
        document["versions"] = _versions()
        (stage / "library.json").write_text(json.dumps(document, indent=2) + "\n")
    document["seconds"] = phases.seconds
    return document


def _render(
    spark: SparkSession,
    job: LibraryJob,
    items: list[images.LibraryItem],
    stage: Path,
    phases: Phases,
) -> pd.DataFrame:
    """The render phase: every image drawn on the executors and written by the driver into
    ``stage``; name, bytes and sha256 of each."""

    def render(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out = {"name": [], "bytes": [], "sha256": [], "data": []}
            for row in batch.to_pylist():
                item = images.LibraryItem(row["name"], row["kind"], row["index"], row["source"])
                data = images.render(item, job.seed, job.width, job.height, job.leaves)
                out["name"].append(item.name)
                out["bytes"].append(len(data))
                out["sha256"].append(codec.sha256(data))
                out["data"].append(data)
            yield pa.RecordBatch.from_pydict(out)

    with phases.phase("render") as note:
        frame = spark.createDataFrame(
            [(i.name, i.kind, i.index, i.source) for i in items],
            "name string, kind string, index long, source string",
        )
        parts = max(1, -(-len(items) // ITEMS_PER_TASK))
        rendered = frame.repartition(parts).mapInArrow(
            render, "name string, bytes long, sha256 string, data binary"
        )
        # the images come back to the driver, which owns the output folder (an
        # executor's disk is not the driver's), one partition at a time
        rows = []
        for r in rendered.toLocalIterator(prefetchPartitions=True):
            (stage / r.name).write_bytes(r.data)
            rows.append((r.name, r.bytes, r.sha256))
        written = pd.DataFrame(rows, columns=["name", "bytes", "sha256"])
        note.update(rows=len(written))
    return written
