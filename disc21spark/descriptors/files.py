"""Descriptor files: the ISC2021 HDF5 layout, .npy with a sibling ids file, or Parquet,
read and written here only, so that the id rules hold for every job.

This module knows formats, layouts and row checks; the reference side (and a background
set) is read on the driver by side.py, the query side by the executors (query_side.py).
Every check names the file and the row or image id.
"""

from __future__ import annotations

import atexit
import dataclasses
import glob
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from disc21spark.core import fs, paths
from disc21spark.core.errors import InputError, first_line
from disc21spark.core.fs import data_files, is_directory
from disc21spark.core.paths import IMAGE_SUFFIX_PATTERN, bare_image_name, display_path

# what h5py raises for a damaged file, besides OSError: a corrupt object header or heap
# surfaces as KeyError ('message not aligned'), RuntimeError or ValueError (tests/test_fuzz.py)
HDF5_DAMAGE = (OSError, KeyError, RuntimeError, ValueError, TypeError)
ID_NAMES = ("id", "image_id", "image_name", "name", "query_id", "reference_id")
VECTOR_NAMES = ("vector", "vectors", "descriptor", "descriptors", "embedding", "features")
# a file's format by its name (a Parquet dataset may also be a folder)
FORMATS = {".h5": "hdf5", ".hdf5": "hdf5", ".parquet": "parquet", ".npy": "npy"}


@dataclass(frozen=True)
class DescriptorFile:
    path: str
    fmt: str  # hdf5 | npy | parquet
    rows: int  # -1 for Parquet (counted by Spark)
    dim: int  # -1 for Parquet queries (checked per row)
    id_column: str = ""
    vector_column: str = ""
    # an HDF5/.npy file on another file system: its copy on the driver, and the name
    # under which the executors find it (SparkFiles); path stays the name users gave
    local: str = ""
    shipped: str = ""


def _readable(f: DescriptorFile) -> str:
    """Where this process opens the file: a task opens the copy Spark shipped to it."""
    if f.shipped:
        from pyspark import SparkFiles, TaskContext

        if TaskContext.get() is not None:
            return SparkFiles.get(f.shipped)
    return f.local or f.path


def _remote(path: str) -> bool:
    """A URI (file: included) is read through Hadoop on the driver and shipped to the
    executors; a plain path is opened where it is, by every node (a shared disk)."""
    return paths.is_uri(path)


def bare_id(name: str) -> str:
    """'images/R000123.jpg' -> 'R000123', as the ISC2021 reader reduces image names."""
    base = PurePosixPath(name.replace("\\", "/")).name
    return bare_image_name(base)


def bare_ids(names) -> np.ndarray:
    """bare_id of every name; most names are bare already and are kept as they are."""
    return np.array(
        [n if not ("/" in n or "\\" in n or "." in n) else bare_id(n) for n in map(str, names)],
        dtype=object,
    )


def bare_id_column(name: Column) -> Column:
    """bare_id as a Spark expression, for ids the executors read (Parquet queries)."""
    return F.regexp_replace(F.regexp_extract(name, r"([^/\\]*)$", 1), IMAGE_SUFFIX_PATTERN, "")


def _format(path: str) -> str:
    lower = path.lower().rstrip("/")
    for suffix, fmt in FORMATS.items():
        if lower.endswith(suffix):
            return fmt
    if (_remote(path) and paths.scheme(path) != "file") or os.path.isdir(display_path(path)):
        # a folder: a Parquet dataset
        return "parquet"
    raise InputError(path, "unknown descriptor format (expected .h5/.hdf5, .npy or Parquet)")


def ids_file(npy_path: str) -> str:
    return npy_path[: -len(".npy")] + "_ids.txt"


def expand(patterns: list[str], side: str, spark: SparkSession) -> list[str]:
    """Every file of the patterns, each glob sorted; several files are one side. A
    pattern on another file system is listed by Hadoop (a folder there: its files)."""
    files: list[str] = []
    for pattern in patterns:
        if _remote(pattern):
            whole = not glob.has_magic(pattern) and fs.exists(pattern, spark)
            if whole and is_directory(spark, pattern):
                files.append(pattern)  # a Parquet dataset
            else:
                files.extend(data_files(spark, pattern))
            continue
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
    if fmt == "parquet":
        return _inspect_parquet(spark, path)
    if _remote(path):
        return _inspect_remote(spark, path, fmt)
    return _inspect_hdf5(path) if fmt == "hdf5" else _inspect_npy(path)


_COPIES: list[str] = []  # folders of remote files copied here, removed at exit


def _inspect_remote(spark: SparkSession, path: str, fmt: str) -> DescriptorFile:
    """An HDF5/.npy file on another file system: copied to the driver through Hadoop
    (h5py and numpy need random access), shipped to the executors with addFile."""

    if not _COPIES:
        _COPIES.append(tempfile.mkdtemp(prefix="disc21spark-descriptors-"))
        atexit.register(shutil.rmtree, _COPIES[0], True)
    folder = Path(tempfile.mkdtemp(dir=_COPIES[0]))
    sources = [path] + ([ids_file(path)] if fmt == "npy" else [])
    for source in sources:
        if fmt == "npy" and source != path and not fs.exists(source, spark):
            raise InputError(path, f"needs its ids file {ids_file(path)} (one id per line)")
        fs.copy_to(source, folder, spark)
    local = str(folder / PurePosixPath(path).name)
    try:
        found = _inspect_hdf5(local) if fmt == "hdf5" else _inspect_npy(local)
    except InputError as error:  # named as the user named it
        raise InputError(path, error.reason.replace(local, path), error.where) from None
    for source in sources:
        spark.sparkContext.addFile(str(folder / PurePosixPath(source).name))
    return dataclasses.replace(found, path=path, local=local, shipped=Path(local).name)


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
    except HDF5_DAMAGE as exc:
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


def npy_ids(f: DescriptorFile) -> list[str] | None:
    """A .npy file's ids, from its sibling text file; None for HDF5 (read with each block)."""
    return _read_ids_txt(ids_file(_readable(f))) if f.fmt == "npy" else None


def read_block(
    f: DescriptorFile, start: int, stop: int, ids: list[str] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Ids (bare) and float32 vectors of rows [start, stop) of an HDF5 or .npy file;
    ``ids``: the .npy file's npy_ids, when read already (once per file, not per block)."""
    if f.fmt == "hdf5":
        import h5py

        try:
            with h5py.File(_readable(f), "r") as h:
                vectors = np.asarray(h["vectors"][start:stop], dtype=np.float32)
                names = h["image_names"]
                raw = names.asstr()[start:stop] if names.dtype.kind in "SOU" else names[start:stop]
        except HDF5_DAMAGE as exc:
            where = f"rows {start}..{stop - 1}"
            raise InputError(f.path, f"cannot be read as HDF5 ({exc})", where) from None
    else:
        vectors = np.asarray(np.load(_readable(f), mmap_mode="r")[start:stop], dtype=np.float32)
        raw = (ids if ids is not None else npy_ids(f))[start:stop]
    return bare_ids(raw), np.ascontiguousarray(vectors)


def write_vectors(path: str | os.PathLike, ids: Sequence[str], vectors: np.ndarray) -> None:
    """ids and float32 vectors in the format the name says (FORMATS), as inspect and
    read_block read them back: HDF5 image_names as UTF-8 bytes, .npy beside its ids file."""
    path = Path(path)
    fmt = FORMATS[path.suffix.lower()]
    if fmt == "hdf5":
        import h5py

        with h5py.File(path, "w") as f:
            same = {"track_times": False}  # no timestamps: the same vectors, the same bytes
            f.create_dataset(
                "vectors", data=np.ascontiguousarray(vectors, dtype=np.float32), **same
            )
            f.create_dataset("image_names", data=np.array([i.encode("utf-8") for i in ids]), **same)
    elif fmt == "parquet":
        table = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.ravel(), pa.float32()), vectors.shape[1]
                ),
            }
        )
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    else:
        np.save(path, np.ascontiguousarray(vectors, dtype=np.float32))
        Path(ids_file(str(path))).write_text("".join(f"{i}\n" for i in ids))


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
