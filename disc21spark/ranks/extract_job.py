"""extract_descriptors on Spark: image partitions are described on the executors, the
driver streams the vectors, in id order, into a file the descriptor track reads.

Formats by the output's extension: ``.h5`` (the ISC2021 layout: ``vectors`` and
``image_names``), ``.parquet`` (id, vector), ``.npy`` (+ ``<name>_ids.txt``). With
``--bench``, the output is a folder: ``queries.h5`` and ``references.h5`` with the bench's
ids, plus ``descriptors.json`` (method, metric, dim) for rank evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession

from disc21spark.core import config, record
from disc21spark.core.errors import InputError
from disc21spark.core.output import check_writable, staged_output
from disc21spark.core.phases import Phases
from disc21spark.core.runner import BaseJob, fields_from_options
from disc21spark.descriptors.files import FORMATS, ids_file, write_vectors
from disc21spark.queries import bench_folder
from disc21spark.ranks import methods
from disc21spark.ranks.describe import describe_bench, describe_files, write_set


@dataclass(frozen=True)
class ExtractJob(BaseJob):
    """extract; defaults from conf/defaults.ini [extract]."""

    INPUTS = ("images", "bench")

    method: str
    output: str
    images: list[str] | None = None
    bench: str | None = None
    image_partitions: int | None = config.value("extract", "image_partitions", int)
    overwrite: bool = False

    @classmethod
    def from_options(cls, request: Any) -> ExtractJob:
        return cls(**fields_from_options(cls, request))

    def check(self) -> None:
        """The method (a user module is imported and probed) and the bench, before Spark."""
        try:
            methods.method(self.method)
            if self.bench:
                bench_folder.read(self.bench)
        except ValueError as exc:  # a bad name, a user function's failure: said in full
            raise InputError("", str(exc)) from None

    def output_folder(self) -> str | None:
        # --images writes one file, checked by the job itself
        return self.output if self.bench else None

    def execute(self, spark: SparkSession) -> dict:
        return run(spark, self)

    def summary(self, doc: dict) -> list[str]:
        where = PurePosixPath(self.output)
        if self.bench:
            return [
                f"{self.method}: {doc['references']:,} references and {doc['queries']:,} "
                f"queries ({doc['dim']} dims, {doc['metric']}) → {where}/"
            ]
        return [
            f"{self.method}: {doc['images']:,} images ({doc['dim']} dims, {doc['metric']}), "
            f"{doc['skipped']} skipped → {where}"
        ]


def run(spark: SparkSession, job: ExtractJob) -> dict:
    phases = Phases()
    method = methods.method(job.method)
    out = Path(job.output)
    document = {
        "method": method.name,
        "metric": method.metric,
        "dim": method.dim,
        "reference": method.reference,
    }
    if job.bench:
        bench = bench_folder.read(job.bench)
        with staged_output(out, job.overwrite) as stage:
            with phases.phase("describe") as note:
                sides = describe_bench(spark, bench, [method], job.image_partitions)[method.name]
                write_set(stage, document, bench, sides)
                note.update(rows=sum(len(d.ids) for d in sides.values()))
    else:
        if out.suffix.lower() not in FORMATS:
            raise InputError(str(out), "the output must end in .h5, .parquet or .npy")
        if out.exists() and not job.overwrite:
            raise InputError(str(out), "exists (pass --overwrite to replace it)")
        if out.is_dir():  # --overwrite replaces a file, never a folder
            raise InputError(str(out), "is a folder (the output is one file)")
        check_writable(out.with_name(f".{out.name}.probe"), overwrite=False)  # before the work
        with phases.phase("describe") as note:
            d = describe_files(spark, None, job.images, [method], job.image_partitions)[method.name]
            note.update(rows=len(d.ids), detail=f"{len(d.skipped)} skipped")
        if not d.ids:
            raise InputError(" ".join(job.images or []), "no image could be described")
        # written beside the target, then renamed: a failure leaves the user's file alone
        tmp = out.with_name(f".{out.stem}.partial{out.suffix}")
        write_vectors(tmp, d.ids, d.vectors)
        if FORMATS[out.suffix.lower()] == "npy":
            Path(ids_file(str(tmp))).replace(ids_file(str(out)))
        tmp.replace(out)
        # a single file has no folder for run.json: its record lies beside it
        record.write_to(out.with_name(f"{out.stem}_run.json"))
        skipped = out.with_name(f"{out.stem}_skipped.csv")
        pd.DataFrame(d.skipped, columns=["path", "reason"]).to_csv(skipped, index=False)
        document.update(images=len(d.ids), skipped=len(d.skipped))
    document["seconds"] = phases.seconds
    return document
