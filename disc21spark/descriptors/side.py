"""A whole descriptor side read on the driver: the references, a background or a
training set. The index is built there; the query side, read by the executors, is
query_side.py.

A side read into a store (a file the caller names) is checked and written block by
block as raw float32 rows, then memory-mapped: the driver holds one block at a time,
never the whole side, and the executors can map the same file (shipping.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from disc21spark.core.errors import InputError
from disc21spark.descriptors.files import (
    DescriptorFile,
    bare_ids,
    describe,
    expand,
    first_problem,
    inspect,
    npy_ids,
    read_block,
)

BLOCK_ROWS = 65536  # rows read and checked at a time: 64 MiB at 256 dimensions


@dataclass
class Side:
    """A whole descriptor side: references, a background or a training set."""

    ids: np.ndarray  # object array of bare ids
    vectors: np.ndarray  # float32 [n, d]; a read-only memory map of ``store`` when stored
    source: str
    store: Path | None = None  # the raw float32 file (row-major [n, d]) behind vectors


def side_files(spark: SparkSession, patterns: list[str], side: str) -> list[DescriptorFile]:
    return [inspect(spark, p, side) for p in expand(patterns, side, spark)]


def declared_dim(files: list[DescriptorFile]) -> int | None:
    """The dimension the metadata announces (HDF5/.npy), before reading any vector."""
    sized = [f for f in files if f.fmt != "parquet" and f.rows > 0]
    return sized[0].dim if sized and len(sized) == len(files) else None


def _blocks(spark: SparkSession, f: DescriptorFile):
    """(first row, bare ids, float32 vectors) of one file, BLOCK_ROWS rows at a time
    (a Parquet file whole: Spark reads it)."""
    if f.fmt == "parquet":
        ids, vectors = _read_parquet_side(spark, f)
        yield 0, ids, vectors
        return
    names = npy_ids(f)
    for start in range(0, f.rows, BLOCK_ROWS):
        ids, vectors = read_block(f, start, min(f.rows, start + BLOCK_ROWS), names)
        yield start, ids, vectors


def read_side(
    spark: SparkSession,
    patterns: list[str],
    side: str,
    max_dim: int,
    files: list[DescriptorFile] | None = None,
    store: Path | None = None,
) -> Side:
    """Read every file of a side on the driver, checked: dimensions, values, ids.

    ``store``: a new file to write the vectors to (Side.vectors then maps it); None keeps
    them in memory. Raises InputError naming the file and row of the first problem, or
    the store's folder when it cannot be written (a full disk)."""
    files = files if files is not None else side_files(spark, patterns, side)
    all_ids, origin, kept = [], [], []
    dim = None
    out = _open_store(store, side)
    try:
        for k, f in enumerate(files):
            for start, ids, vectors in _blocks(spark, f):
                if len(vectors) == 0:
                    continue
                if dim is None:
                    dim = vectors.shape[1]
                    if dim > max_dim:
                        raise InputError(f.path, f"{dim} dimensions, more than --max-dim {max_dim}")
                problem = first_problem(ids, vectors, dim)
                if problem:
                    row, reason = problem
                    raise InputError(f.path, reason, describe(ids, row, start))
                all_ids.append(ids)
                origin.append(np.full(len(ids), k))
                _keep(out, kept, vectors, store, side)
    finally:
        if out is not None:
            out.close()
    source = ", ".join(f.path for f in files)
    if not all_ids:
        raise InputError(source, f"the {side} side has no descriptors")
    ids = np.concatenate(all_ids)
    _check_unique(ids, [files[i].path for i in np.concatenate(origin)], side)
    if store is not None:
        return Side(ids, np.memmap(store, np.float32, "r", shape=(len(ids), dim)), source, store)
    # one block (the usual small side) is not copied
    vectors = kept[0] if len(kept) == 1 else np.vstack(kept)
    return Side(ids, np.ascontiguousarray(vectors), source)


def _open_store(store: Path | None, side: str):
    if store is None:
        return None
    try:
        return open(store, "wb")
    except OSError as exc:
        raise _store_error(store, side, exc) from None


def _keep(out, kept: list, vectors: np.ndarray, store: Path | None, side: str) -> None:
    if out is None:
        kept.append(vectors)
        return
    try:
        vectors.tofile(out)
    except OSError as exc:
        raise _store_error(store, side, exc) from None


def _store_error(store: Path, side: str, exc: OSError) -> InputError:
    return InputError(
        str(store.parent),
        f"cannot write the {side} vectors for the executors ({exc.strerror or exc}); "
        "point TMPDIR at a disk with room for them",
    )


def _check_unique(ids: np.ndarray, file_of_row: list[str], side: str) -> None:
    uniq, first, counts = np.unique(ids.astype(str), return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = uniq[counts > 1][0]
        rows = np.nonzero(ids.astype(str) == dup)[0]
        raise InputError(
            file_of_row[rows[1]],
            f"image id '{dup}' appears {len(rows)} times in the {side} descriptors",
        )


def _read_parquet_side(spark: SparkSession, f: DescriptorFile) -> tuple[np.ndarray, np.ndarray]:
    table = (
        spark.read.parquet(f.path)
        .select(
            F.col(f.id_column).alias("id"),
            F.col(f.vector_column).cast("array<float>").alias("vector"),
            F.size(f.vector_column).alias("size"),
        )
        .toArrow()
    )
    ids = bare_ids(i or "" for i in table.column("id").to_pylist())
    if len(ids) == 0:
        return ids, np.zeros((0, 0), np.float32)
    sizes = table.column("size").to_numpy()
    if (sizes < 0).any():  # Spark's size of a null array
        raise InputError(f.path, "missing vector", describe(ids, int(np.argmax(sizes < 0))))
    if (sizes != sizes[0]).any():
        row = int(np.argmax(sizes != sizes[0]))
        raise InputError(
            f.path, f"vector of {sizes[row]} values, expected {sizes[0]}", describe(ids, row)
        )
    values = table.column("vector").combine_chunks()
    flat = values.flatten().to_numpy(zero_copy_only=False)
    vectors = np.asarray(flat, dtype=np.float32).reshape(len(ids), int(sizes[0]))
    # nulls inside a vector become NaN and are reported by first_problem
    return ids, vectors
