"""extract_descriptors on Spark: image partitions are described on the executors, the
driver streams the vectors, in id order, into a file the descriptor track reads.

Formats by the output's extension: ``.h5`` (the ISC2021 layout: ``vectors`` and
``image_names``), ``.parquet`` (id, vector), ``.npy`` (+ ``<name>_ids.txt``). With
``--bench``, the output is a folder: ``queries.h5`` and ``references.h5`` with the bench's
ids, plus ``descriptors.json`` (method, metric, dim) for rank evaluation.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from disc21spark.core.errors import InputError, display_path, first_line
from disc21spark.core.output import check_writable, staged_output
from disc21spark.core.phases import Phases
from disc21spark.queries import bench_folder as benchset
from disc21spark.queries import codec as images
from disc21spark.queries.job import ROWS_PER_BATCH, image_frame, in_tasks, source_frame
from disc21spark.ranks import methods as features

FORMATS = {".h5": "hdf5", ".hdf5": "hdf5", ".parquet": "parquet", ".npy": "npy"}
PER_TASK = 128  # images per task: a few ms each to decode and describe


@dataclass(frozen=True)
class Described:
    ids: list[str]
    vectors: np.ndarray  # (n, dim) float32, rows in id order
    skipped: list[tuple[str, str]]  # (path, reason) of files that could not be described


def spark_path(path: str) -> str:
    """A manifest path as the binaryFile source names it (``file:/abs`` for local files)."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path):
        return path
    # Hadoop would resolve a relative path against the JVM's start folder, not ours
    return f"file:{os.path.abspath(path)}"


def describe_files(
    spark: SparkSession, files: pd.DataFrame | None, patterns: list[str] | None,
    names: list[str], partitions: int | None = None,
) -> dict[str, Described]:  # fmt: skip
    """Vectors of the images under every method in `names`, each image decoded once:
    ``files`` (id, path) from a bench, or every image the ``patterns`` name (id = file
    name without extension)."""
    methods = [features.method(n) for n in names]  # bad names fail on the driver
    if files is not None:
        table = pd.DataFrame({"path": files.path.map(spark_path), "id": files.id})
        ids = spark.createDataFrame(table, "path string, id string")
        work = source_frame(spark, sorted(set(table.path))).join(F.broadcast(ids), "path")
        count = len(table)
    else:
        work = image_frame(spark, patterns)
        count = len(work.inputFiles())
        work = work.withColumn("id", F.regexp_extract("path", r"([^/]+?)(\.[^./]*)?$", 1))
    work = work.repartition(partitions) if partitions else in_tasks(spark, work, count, PER_TASK)
    columns = [f"v{i}" for i in range(len(names))]
    schema = pa.schema(
        [("id", pa.string()), ("problem", pa.string())] + [(c, pa.binary()) for c in columns]
    )

    def describe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ms = [features.method(n) for n in names]  # again in the worker: user modules import here
        for batch in batches:
            out = {"id": batch.column("id").to_pylist(), "problem": []}
            for c in columns:
                out[c] = []
            for path, content in zip(
                batch.column("path").to_pylist(), batch.column("content").to_pylist()
            ):
                try:
                    img = images.decode(content)
                except images.Unreadable as exc:
                    out["problem"].append(f"{display_path(path)}: {exc}")
                    for c in columns:
                        out[c].append(None)
                    continue
                out["problem"].append(None)
                for c, m in zip(columns, ms):
                    out[c].append(np.asarray(m.describe(img), dtype=np.float32).tobytes())
            yield pa.RecordBatch.from_pydict(out, schema=schema)

    ddl = "id string, problem string" + "".join(f", {c} binary" for c in columns)
    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", ROWS_PER_BATCH)
    try:
        frame = work.mapInArrow(describe, ddl).toPandas()
    except Exception as exc:
        raise InputError(
            f"--method {','.join(names)}", f"describing the images failed: {first_line(exc)}"
        ) from None
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)
    bad = frame[frame.problem.notna()]
    good = frame[frame.problem.isna()].sort_values("id", kind="stable")
    repeated = good.id[good.id.duplicated()]
    if len(repeated):
        raise InputError(
            " ".join(patterns or []),
            f"two images have the id {repeated.iloc[0]!r} (ids are file names without extension)",
        )
    if files is not None:
        if len(bad):
            where, reason = bad.problem.iloc[0].split(": ", 1)
            raise InputError(where, reason)
        missing = sorted(set(files.id) - set(good.id))
        if missing:
            raise InputError(
                str(files.path[files.id == missing[0]].iloc[0]), "listed in the bench but not found"
            )
    skipped = [tuple(p.split(": ", 1)) for p in bad.problem]
    out = {}
    for c, name, m in zip(columns, names, methods):
        vectors = np.frombuffer(b"".join(good[c]), dtype=np.float32).reshape(len(good), m.dim)
        out[name] = Described(list(good.id), vectors, skipped)
    return out




def write_vectors(path: Path, ids: list[str], vectors: np.ndarray) -> None:
    fmt = FORMATS[path.suffix.lower()]
    if fmt == "hdf5":
        import h5py

        with h5py.File(path, "w") as f:
            f.create_dataset("vectors", data=np.ascontiguousarray(vectors, dtype=np.float32))
            f.create_dataset("image_names", data=np.array([i.encode("utf-8") for i in ids]))
    elif fmt == "parquet":
        table = pa.table(
            {"id": pa.array(ids, pa.string()),
             "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), vectors.shape[1])}
        )  # fmt: skip
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    else:
        np.save(path, np.ascontiguousarray(vectors, dtype=np.float32))
        Path(str(path)[: -len(".npy")] + "_ids.txt").write_text("".join(f"{i}\n" for i in ids))


def describe_bench(
    spark: SparkSession, bench: benchset.Bench, names: list[str], partitions: int | None = None
) -> dict[str, dict[str, Described]]:
    """method → side ("references", "queries") → vectors, in one pass over the images."""
    sides = {side: bench_files(bench, side) for side in ("references", "queries")}
    files = pd.concat(list(sides.values()), ignore_index=True)
    described = describe_files(spark, files, None, names, partitions)
    out: dict[str, dict[str, Described]] = {}
    for name, d in described.items():
        ids = np.asarray(d.ids)
        out[name] = {}
        for side, listed in sides.items():
            keep = np.isin(ids, listed.id.to_numpy())
            out[name][side] = Described(list(ids[keep]), d.vectors[keep], [])
    return out


def write_set(folder: Path, about: dict, bench: benchset.Bench, sides: dict[str, Described]) -> None:
    """A bench's vectors as rank_eval and the descriptor track read them: references.h5,
    queries.h5 and descriptors.json (method, metric, dim, reference, counts, bench)."""
    for side, d in sides.items():
        write_vectors(folder / f"{side}.h5", d.ids, d.vectors)
        about[side] = len(d.ids)
    about["bench"] = str(bench.folder.resolve())
    (folder / "descriptors.json").write_text(json.dumps(about, indent=2) + "\n")


def bench_files(bench: benchset.Bench, side: str) -> pd.DataFrame:
    if side == "queries":
        paths = [str(bench.folder / f) for f in bench.queries.file]
        return pd.DataFrame({"id": bench.queries.query_id, "path": paths})
    return pd.DataFrame({"id": bench.references.reference_id, "path": bench.references.path})


@dataclass(frozen=True)
class ExtractJob:
    method: str
    output: str
    images: list[str] | None = None
    bench: str | None = None
    partitions: int | None = None
    overwrite: bool = False


def run(spark: SparkSession, job: ExtractJob) -> dict:
    phases = Phases()
    method = features.method(job.method)
    out = Path(job.output)
    document = {"method": method.name, "metric": method.metric, "dim": method.dim,
                "reference": method.reference}  # fmt: skip
    if job.bench:
        bench = benchset.read(job.bench)
        with staged_output(out, job.overwrite) as stage:
            with phases.phase("describe") as note:
                sides = describe_bench(spark, bench, [job.method], job.partitions)[job.method]
                write_set(stage, document, bench, sides)
                note.update(rows=sum(len(d.ids) for d in sides.values()))
    else:
        if out.suffix.lower() not in FORMATS:
            raise InputError(str(out), "the output must end in .h5, .parquet or .npy")
        if out.exists() and not job.overwrite:
            raise InputError(str(out), "exists (pass --overwrite to replace it)")
        with phases.phase("describe") as note:
            d = describe_files(spark, None, job.images, [job.method], job.partitions)[job.method]
            note.update(rows=len(d.ids), detail=f"{len(d.skipped)} skipped")
        if not d.ids:
            raise InputError(" ".join(job.images or []), "no image could be described")
        # written beside the target, then renamed: a failure leaves the user's file alone
        tmp = out.with_name(f".{out.stem}.partial{out.suffix}")
        write_vectors(tmp, d.ids, d.vectors)
        if FORMATS[out.suffix.lower()] == "npy":
            Path(str(tmp)[: -len(".npy")] + "_ids.txt").replace(str(out)[: -len(".npy")] + "_ids.txt")
        tmp.replace(out)
        skipped = out.with_name(f"{out.stem}_skipped.csv")
        pd.DataFrame(d.skipped, columns=["path", "reason"]).to_csv(skipped, index=False)
        document.update(images=len(d.ids), skipped=len(d.skipped))
    document["seconds"] = phases.seconds
    return document


def extract_cli(args) -> dict:
    """jobs/extract_descriptors.py's call."""
    from disc21spark.core.session import spark_session

    job = ExtractJob(args.method, args.output, args.images, args.bench, args.partitions, args.overwrite)
    features.method(job.method)
    if job.bench:
        benchset.read(job.bench)
        check_writable(job.output, job.overwrite)
    spark = spark_session(args.profile, args.master, debug=args.debug)
    doc = run(spark, job)
    where = PurePosixPath(job.output)
    if job.bench:
        print(f"{job.method}: {doc['references']:,} references and {doc['queries']:,} queries "
              f"({doc['dim']} dims, {doc['metric']}) → {where}/")  # fmt: skip
    else:
        print(f"{job.method}: {doc['images']:,} images ({doc['dim']} dims, {doc['metric']}), "
              f"{doc['skipped']} skipped → {where}")  # fmt: skip
    return doc
