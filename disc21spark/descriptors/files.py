"""Descriptor files: the ISC2021 HDF5 layout, .npy with a sibling ids file, or Parquet.

The reference side (and a background set) is read whole on the driver: the index is
built there. The query side is read by the executors, each a range of rows, so nothing
the size of the query set passes through the driver. Every check names the file and
the row or image id.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from disc21spark.core.errors import InputError, display_path

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")
ID_NAMES = ("id", "image_id", "image_name", "name", "query_id", "reference_id")
VECTOR_NAMES = ("vector", "vectors", "descriptor", "descriptors", "embedding", "features")
QUERY_SCHEMA = T.StructType(
    [
        T.StructField("query_id", T.StringType()),
        T.StructField("qpos", T.LongType()),
        # float32 bytes: one copy into Spark's rows, and zero-copy back out (an
        # array<float> column is converted value by value both ways)
        T.StructField("vector", T.BinaryType()),
        T.StructField("problem", T.StringType()),
    ]
)


@dataclass(frozen=True)
class DescriptorFile:
    path: str
    fmt: str  # hdf5 | npy | parquet
    rows: int  # -1 for Parquet (counted by Spark)
    dim: int  # -1 for Parquet queries (checked per row)
    id_column: str = ""
    vector_column: str = ""


def bare_id(name: str) -> str:
    """'images/R000123.jpg' -> 'R000123', as the ISC2021 reader reduces image names."""
    base = PurePosixPath(name.replace("\\", "/")).name
    stem, dot, suffix = base.rpartition(".")
    return stem if dot and f".{suffix.lower()}" in IMAGE_SUFFIXES else base


def bare_ids(names) -> np.ndarray:
    """bare_id of every name; most names are bare already and are kept as they are."""
    return np.array(
        [n if not ("/" in n or "\\" in n or "." in n) else bare_id(n) for n in map(str, names)],
        dtype=object,
    )


def _format(path: str) -> str:
    lower = path.lower().rstrip("/")
    if lower.endswith((".h5", ".hdf5")):
        return "hdf5"
    if lower.endswith(".npy"):
        return "npy"
    if lower.endswith(".parquet") or os.path.isdir(path):
        return "parquet"
    raise InputError(path, "unknown descriptor format (expected .h5/.hdf5, .npy or Parquet)")


def ids_file(npy_path: str) -> str:
    return npy_path[: -len(".npy")] + "_ids.txt"


def expand(patterns: list[str], side: str) -> list[str]:
    """Every file of the patterns, each glob sorted; several files are one side."""
    files: list[str] = []
    for pattern in patterns:
        local = display_path(pattern)
        found = sorted(glob.glob(local)) if glob.has_magic(local) else [local]
        found = [f for f in found if os.path.exists(f)]
        if not found:
            raise InputError(pattern, f"no {side} descriptor file found")
        files.extend(found)
    return files


def inspect(spark: SparkSession, path: str, side: str) -> DescriptorFile:
    """Rows, dimension and layout of one file, from its metadata only."""
    fmt = _format(path)
    if fmt == "hdf5":
        return _inspect_hdf5(path)
    if fmt == "npy":
        return _inspect_npy(path)
    return _inspect_parquet(spark, path)


def _inspect_hdf5(path: str) -> DescriptorFile:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            missing = [n for n in ("vectors", "image_names") if n not in f]
            if missing:
                raise InputError(path, f"missing HDF5 dataset {' and '.join(map(repr, missing))}")
            vectors, names = f["vectors"], f["image_names"]
            if vectors.ndim != 2 or vectors.dtype.kind != "f":
                raise InputError(
                    path,
                    f"'vectors' must be a 2-D float array, found {vectors.dtype} {vectors.shape}",
                )
            if names.ndim != 1 or len(names) != vectors.shape[0]:
                raise InputError(
                    path,
                    f"{len(names)} image_names for {vectors.shape[0]} vectors (they must match)",
                )
            return DescriptorFile(path, "hdf5", int(vectors.shape[0]), int(vectors.shape[1]))
    except OSError as exc:
        raise InputError(path, f"cannot be read as HDF5 ({exc})") from None


def _inspect_npy(path: str) -> DescriptorFile:
    try:
        vectors = np.load(path, mmap_mode="r")
    except (OSError, ValueError) as exc:
        raise InputError(path, f"cannot be read as .npy ({exc})") from None
    if vectors.ndim != 2 or vectors.dtype.kind != "f":
        raise InputError(
            path, f"must hold a 2-D float array, found {vectors.dtype} {vectors.shape}"
        )
    sibling = ids_file(path)
    if not os.path.exists(sibling):
        raise InputError(path, f"needs its ids file {sibling} (one id per line)")
    n_ids = len(_read_ids_txt(sibling))
    if n_ids != vectors.shape[0]:
        raise InputError(sibling, f"{n_ids} ids for {vectors.shape[0]} vectors (they must match)")
    return DescriptorFile(path, "npy", int(vectors.shape[0]), int(vectors.shape[1]))


def _read_ids_txt(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def _inspect_parquet(spark: SparkSession, path: str) -> DescriptorFile:
    try:
        schema = spark.read.parquet(path).schema
    except Exception as exc:
        from disc21spark.core.errors import first_line

        raise InputError(path, f"cannot be read as Parquet ({first_line(exc)})") from None
    strings = [f.name for f in schema if isinstance(f.dataType, T.StringType)]
    arrays = [
        f.name
        for f in schema
        if isinstance(f.dataType, T.ArrayType)
        and isinstance(f.dataType.elementType, (T.FloatType, T.DoubleType))
    ]
    id_col = _pick(strings, ID_NAMES)
    vec_col = _pick(arrays, VECTOR_NAMES)
    if not id_col or not vec_col:
        columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema)
        raise InputError(
            path,
            "needs one string id column and one array<float> vector column, found: " + columns,
        )
    return DescriptorFile(path, "parquet", -1, -1, id_col, vec_col)


def _pick(names: list[str], preferred: tuple[str, ...]) -> str:
    if len(names) == 1:
        return names[0]
    for name in preferred:
        if name in names:
            return name
    return ""


def read_block(f: DescriptorFile, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Ids (bare) and float32 vectors of rows [start, stop) of an HDF5 or .npy file."""
    if f.fmt == "hdf5":
        import h5py

        with h5py.File(f.path, "r") as h:
            vectors = np.asarray(h["vectors"][start:stop], dtype=np.float32)
            names = h["image_names"]
            raw = names.asstr()[start:stop] if names.dtype.kind in "SOU" else names[start:stop]
    else:
        vectors = np.asarray(np.load(f.path, mmap_mode="r")[start:stop], dtype=np.float32)
        raw = _read_ids_txt(ids_file(f.path))[start:stop]
    return bare_ids(raw), np.ascontiguousarray(vectors)


def first_problem(ids: np.ndarray, vectors: np.ndarray, dim: int) -> tuple[int, str] | None:
    """The first row that cannot be searched, and why."""
    if vectors.shape[1] != dim:
        return 0, f"vectors have {vectors.shape[1]} dimensions, expected {dim}"
    finite = np.isfinite(vectors).all(axis=1)
    empty = np.array([not i for i in ids], dtype=bool)
    bad = np.nonzero(~finite | empty)[0]
    if not len(bad):
        return None
    row = int(bad[0])
    if empty[row]:
        return row, "empty image id"
    return row, "vector has NaN or infinite values"


def describe(ids: np.ndarray, row: int, first_row: int = 0) -> str:
    """Where a row is (``row`` of a block starting at file row ``first_row``), in words a
    user can look up."""
    n = first_row + row + 1
    return f"row {n} (image '{ids[row]}')" if ids[row] else f"row {n}"


@dataclass
class Side:
    """A whole descriptor side in memory: references or a background set."""

    ids: np.ndarray  # object array of bare ids
    vectors: np.ndarray  # float32 [n, d]
    source: str


def side_files(spark: SparkSession, patterns: list[str], side: str) -> list[DescriptorFile]:
    return [inspect(spark, p, side) for p in expand(patterns, side)]


def declared_dim(files: list[DescriptorFile]) -> int | None:
    """The dimension the metadata announces (HDF5/.npy), before reading any vector."""
    sized = [f for f in files if f.fmt != "parquet" and f.rows > 0]
    return sized[0].dim if sized and len(sized) == len(files) else None


def read_side(
    spark: SparkSession,
    patterns: list[str],
    side: str,
    max_dim: int,
    files: list[DescriptorFile] | None = None,
) -> Side:
    """Read every file of a side on the driver, checked: dimensions, values, ids."""
    files = files if files is not None else side_files(spark, patterns, side)
    all_ids, all_vectors, origin = [], [], []
    dim = None
    for f in files:
        if f.fmt == "parquet":
            ids, vectors = _read_parquet_side(spark, f)
        else:
            ids, vectors = read_block(f, 0, f.rows)
        if len(vectors) == 0:
            continue
        if dim is None:
            dim = vectors.shape[1]
            if dim > max_dim:
                raise InputError(f.path, f"{dim} dimensions, more than --max-dim {max_dim}")
        problem = first_problem(ids, vectors, dim)
        if problem:
            row, reason = problem
            raise InputError(f.path, reason, describe(ids, row))
        all_ids.append(ids)
        all_vectors.append(vectors)
        origin.append(np.full(len(ids), len(origin)))
    source = ", ".join(f.path for f in files)
    if not all_ids:
        raise InputError(source, f"the {side} side has no descriptors")
    ids = np.concatenate(all_ids)
    _check_unique(ids, [files[i].path for i in np.concatenate(origin)], side)
    # one file (the usual case) is not copied: 200 MB of page faults saved
    vectors = all_vectors[0] if len(all_vectors) == 1 else np.vstack(all_vectors)
    return Side(ids, np.ascontiguousarray(vectors), source)


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


# -- the query side, read by the executors ------------------------------------------------


def query_files(spark: SparkSession, patterns: list[str]) -> list[DescriptorFile]:
    files = [inspect(spark, p, "query") for p in expand(patterns, "query")]
    kinds = {f.fmt == "parquet" for f in files}
    if len(kinds) > 1:
        raise InputError(", ".join(patterns), "query descriptors mix Parquet with HDF5/.npy files")
    return files


def row_ranges(files: list[DescriptorFile], parts: int) -> list[list[tuple[int, int, int, int]]]:
    """Split the rows of all files into ``parts`` contiguous ranges; each range is a list
    of (file index, start, stop, global position of start)."""
    total = sum(f.rows for f in files)
    parts = max(1, min(parts, total))
    bounds = [round(i * total / parts) for i in range(parts + 1)]
    tasks: list[list[tuple[int, int, int, int]]] = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        task, offset = [], 0
        for i, f in enumerate(files):
            lo, hi = max(a, offset), min(b, offset + f.rows)
            if lo < hi:
                task.append((i, lo - offset, hi - offset, lo))
            offset += f.rows
        tasks.append(task)
    return tasks


def _query_batch(
    ids: np.ndarray, qpos: np.ndarray, vectors: np.ndarray, problems
) -> pa.RecordBatch:
    n, d = vectors.shape
    offsets = pa.array(np.arange(0, (n + 1) * d * 4, d * 4, dtype=np.int32))
    data = pa.py_buffer(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
    values = pa.BinaryArray.from_buffers(pa.binary(), n, [None, offsets.buffers()[1], data])
    return pa.RecordBatch.from_arrays(
        [
            pa.array(list(ids), pa.string()),
            pa.array(qpos, pa.int64()),
            values,
            pa.array(problems, pa.string()),
        ],
        names=["query_id", "qpos", "vector", "problem"],
    )


def vectors_of(column: pa.Array, rows: int) -> np.ndarray:
    """float32 [rows, d] from a query batch's vector column (bytes or array<float>)."""
    if pa.types.is_binary(column.type):
        offsets = np.frombuffer(column.buffers()[1], np.int32, rows + 1, column.offset * 4)
        data = np.frombuffer(column.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
        return data.view(np.float32).reshape(rows, -1)
    flat = column.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, np.float32).reshape(rows, -1)


def query_frame(
    spark: SparkSession, files: list[DescriptorFile], dim: int, parts: int
) -> DataFrame:
    """query_id, qpos (global row), vector, problem (null when fine), read in parallel."""
    if files[0].fmt == "parquet":
        frame = _parquet_queries(spark, files, dim)
        # Spark splits Parquet by bytes: a small query set can be a single partition
        return frame.repartition(parts) if frame.rdd.getNumPartitions() < parts else frame
    tasks = row_ranges(files, parts)
    chunk = 65536

    def read(batches):
        from pyspark import TaskContext

        task = tasks[TaskContext.get().partitionId()]
        for _ in batches:  # one row per partition: its index
            pass
        for i, start, stop, pos in task:
            f = files[i]
            for a in range(start, stop, chunk):
                b = min(stop, a + chunk)
                ids, vectors = read_block(f, a, b)
                # the first problem of each chunk is enough: the check keeps the first of all
                problems = [None] * len(ids)
                found = first_problem(ids, vectors, dim)
                if found:
                    row, reason = found
                    problems[row] = f"{f.path}: {describe(ids, row, a)}: {reason}"
                if vectors.shape[1] != dim:
                    vectors = np.zeros((len(ids), dim), np.float32)  # the job fails on it
                qpos = np.arange(pos + (a - start), pos + (b - start), dtype=np.int64)
                yield _query_batch(ids, qpos, vectors, problems)

    return spark.range(0, len(tasks), 1, len(tasks)).mapInArrow(read, QUERY_SCHEMA)


def _parquet_queries(spark: SparkSession, files: list[DescriptorFile], dim: int) -> DataFrame:
    frames = []
    for f in files:
        vec = F.col(f.vector_column)
        ident = F.col(f.id_column)
        bare = F.regexp_replace(
            F.regexp_extract(ident, r"([^/\\]*)$", 1), r"(?i)\.(jpe?g|png|webp|bmp|gif|tiff?)$", ""
        )
        where = F.concat(F.lit(f"{f.path}: image '"), bare, F.lit("': "))
        problem = (
            F.when(ident.isNull() | (bare == ""), F.lit(f"{f.path}: empty image id"))
            .when(vec.isNull(), F.concat(where, F.lit("missing vector")))
            .when(
                F.size(vec) != dim,
                F.concat(
                    where,
                    F.lit("vector of "),
                    F.size(vec).cast("string"),
                    F.lit(f" values, expected {dim}"),
                ),
            )
            .when(
                F.exists(vec, lambda x: x.isNull() | F.isnan(x) | (F.abs(x) == float("inf"))),
                F.concat(where, F.lit("vector has NaN or infinite values")),
            )
        )
        frames.append(
            spark.read.parquet(f.path).select(
                bare.alias("query_id"),
                F.lit(0).cast("long").alias("qpos"),
                vec.cast("array<float>").alias("vector"),
                problem.alias("problem"),
            )
        )
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return frame.withColumn("qpos", F.monotonically_increasing_id())
