"""Images described on the executors, each decoded once whatever the number of methods:
the vectors extract_descriptors writes and rank_eval ranks with."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.errors import InputError, first_line
from disc21spark.core.paths import display_path
from disc21spark.core.spark import spark_conf
from disc21spark.core.spark_images import (
    ARROW_BATCH,
    image_frame,
    in_tasks,
    listed_files,
    source_frame,
    unreturned,
)
from disc21spark.descriptors.files import write_vectors
from disc21spark.queries import bench_folder, codec
from disc21spark.ranks.methods import Method

PER_TASK = 128  # images per task: a few ms each to decode and describe
SIDES = ("references", "queries")


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
    spark: SparkSession,
    files: pd.DataFrame | None,
    patterns: list[str] | None,
    methods: list[Method],
    partitions: int | None = None,
) -> dict[str, Described]:
    """Vectors of the images under every method (by name), each image decoded once:
    ``files`` (id, path) from a bench, or every image the ``patterns`` name (id = file
    name without extension). The methods are checked already: the executors get them
    as they are (a user function travels by reference: its module imports there)."""
    work = _images(spark, files, patterns, partitions)
    listed = listed_files(work) if files is None else []
    columns = [f"v{i}" for i in range(len(methods))]
    ddl = "id string, problem string" + "".join(f", {c} binary" for c in columns)
    try:
        with spark_conf(spark, ARROW_BATCH):
            frame = work.mapInArrow(_describer(methods, columns), ddl).toPandas()
    except Exception as exc:
        raise InputError(
            f"--method {','.join(m.name for m in methods)}",
            f"describing the images failed: {first_line(exc)}",
        ) from None
    bad = frame[frame.problem.notna()]
    good = frame[frame.problem.isna()].sort_values("id", kind="stable")
    if len(frame) < len(listed):  # no row for a file of zero bytes or one it cannot open
        bad = pd.concat([bad, _empty_files(listed, frame, len(columns))])
    _check_described(good, bad, files, patterns)
    skipped = [tuple(p.split(": ", 1)) for p in bad.problem]
    out = {}
    for c, m in zip(columns, methods):
        vectors = np.frombuffer(b"".join(good[c]), dtype=np.float32).reshape(len(good), m.dim)
        out[m.name] = Described(list(good.id), vectors, skipped)
    return out


def _empty_files(listed: list[str], frame: pd.DataFrame, n_columns: int) -> pd.DataFrame:
    """Rows for the listed files the scan did not return, with the reason."""
    described = set(frame.id[frame.problem.isna()]) | {
        p.split(": ", 1)[0] for p in frame.problem.dropna()
    }
    missing = [p for p in listed if display_path(p) not in described and _id(p) not in described]
    problems = [f"{display_path(p)}: {unreturned(p)}" for p in missing]
    rows = {"id": [_id(p) for p in missing], "problem": problems}
    return pd.DataFrame({**rows, **{f"v{i}": None for i in range(n_columns)}})


def _id(path: str) -> str:
    """A file's id as the frame's regular expression makes it: its name without extension."""
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


def _images(
    spark: SparkSession,
    files: pd.DataFrame | None,
    patterns: list[str] | None,
    partitions: int | None,
) -> DataFrame:
    """path, content and id of every image to describe, in tasks of PER_TASK images."""
    if files is not None:
        table = pd.DataFrame({"path": files.path.map(spark_path), "id": files.id})
        ids = spark.createDataFrame(table, "path string, id string")
        work = source_frame(spark, sorted(set(table.path))).join(F.broadcast(ids), "path")
        count = len(table)
    else:
        work = image_frame(spark, patterns)
        count = len(work.inputFiles())
        work = work.withColumn("id", F.regexp_extract("path", r"([^/]+?)(\.[^./]*)?$", 1))
    return work.repartition(partitions) if partitions else in_tasks(spark, work, count, PER_TASK)


def _describer(
    methods: list[Method], columns: list[str]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The executors' function: id, problem (null when described) and one float32 bytes
    column per method."""
    schema = pa.schema(
        [("id", pa.string()), ("problem", pa.string())] + [(c, pa.binary()) for c in columns]
    )

    def describe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out = {"id": batch.column("id").to_pylist(), "problem": []}
            for c in columns:
                out[c] = []
            for path, content in zip(
                batch.column("path").to_pylist(), batch.column("content").to_pylist()
            ):
                try:
                    img = codec.decode(content)
                except codec.Unreadable as exc:
                    out["problem"].append(f"{display_path(path)}: {exc}")
                    for c in columns:
                        out[c].append(None)
                    continue
                out["problem"].append(None)
                for c, m in zip(columns, methods):
                    out[c].append(np.asarray(m.describe(img), dtype=np.float32).tobytes())
            yield pa.RecordBatch.from_pydict(out, schema=schema)

    return describe


def _check_described(
    good: pd.DataFrame, bad: pd.DataFrame, files: pd.DataFrame | None, patterns: list[str] | None
) -> None:
    """Ids are unique; a bench's images must all be described (a folder's may be skipped)."""
    repeated = good.id[good.id.duplicated()]
    if len(repeated):
        raise InputError(
            " ".join(patterns or []),
            f"two images have the id {repeated.iloc[0]!r} (ids are file names without extension)",
        )
    if files is None:
        return
    if len(bad):
        where, reason = bad.problem.iloc[0].split(": ", 1)
        raise InputError(where, reason)
    missing = sorted(set(files.id) - set(good.id))
    if missing:
        path = str(files.path[files.id == missing[0]].iloc[0])
        raise InputError(path, f"listed in the bench, but {unreturned(path)}")


def describe_bench(
    spark: SparkSession,
    bench: bench_folder.Bench,
    methods: list[Method],
    partitions: int | None = None,
) -> dict[str, dict[str, Described]]:
    """method name → side ("references", "queries") → vectors, in one pass over the images."""
    sides = {side: bench_files(bench, side) for side in SIDES}
    files = pd.concat(list(sides.values()), ignore_index=True)
    described = describe_files(spark, files, None, methods, partitions)
    out: dict[str, dict[str, Described]] = {}
    for name, d in described.items():
        ids = np.asarray(d.ids)
        out[name] = {}
        for side, listed in sides.items():
            keep = np.isin(ids, listed.id.to_numpy())
            out[name][side] = Described(list(ids[keep]), d.vectors[keep], [])
    return out


def write_set(
    folder: Path, about: dict, bench: bench_folder.Bench, sides: dict[str, Described]
) -> None:
    """A bench's vectors as rank_eval and the descriptor track read them: references.h5,
    queries.h5 and descriptors.json (method, metric, dim, reference, counts, bench)."""
    for side, d in sides.items():
        write_vectors(folder / f"{side}.h5", d.ids, d.vectors)
        about[side] = len(d.ids)
    about["bench"] = str(bench.folder.resolve())
    (folder / "descriptors.json").write_text(json.dumps(about, indent=2) + "\n")


def bench_files(bench: bench_folder.Bench, side: str) -> pd.DataFrame:
    """id and path of one side's images."""
    if side == "queries":
        paths = [str(bench.folder / f) for f in bench.queries.file]
        return pd.DataFrame({"id": bench.queries.query_id, "path": paths})
    return pd.DataFrame({"id": bench.references.reference_id, "path": bench.references.path})
