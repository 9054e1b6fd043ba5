"""The query side of the descriptor track, read by the executors: each task a range of
rows, so nothing the size of the query set passes through the driver."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from disc21spark.core.errors import InputError
from disc21spark.core.spark import union_all
from disc21spark.descriptors.files import (
    DescriptorFile,
    bare_id_column,
    describe,
    expand,
    first_problem,
    inspect,
    npy_ids,
    read_block,
)

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


def query_files(spark: SparkSession, patterns: list[str]) -> list[DescriptorFile]:
    files = [inspect(spark, p, "query") for p in expand(patterns, "query", spark)]
    kinds = {f.fmt == "parquet" for f in files}
    if len(kinds) > 1:
        raise InputError(", ".join(patterns), "query descriptors mix Parquet with HDF5/.npy files")
    return files


def default_partitions(spark: SparkSession, files: list[DescriptorFile]) -> int:
    """How many tasks read the queries (HDF5/.npy: rows are known before reading)."""
    rows = sum(max(f.rows, 0) for f in files)
    # enough partitions to keep every core busy; each big enough for FAISS's batches
    return max(
        1, min(max(spark.sparkContext.defaultParallelism, rows // 200_000), max(rows // 1000, 1))
    )


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
            names = npy_ids(f)
            for a in range(start, stop, chunk):
                b = min(stop, a + chunk)
                ids, vectors = read_block(f, a, b, names)
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
        bare = bare_id_column(ident)
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
    return union_all(frames).withColumn("qpos", F.monotonically_increasing_id())


def check_queries(frame: DataFrame, source: str) -> int:
    """Count the queries; fail on the first bad vector (file order) or a repeated id.
    One job: a shuffle of the ids only, the vectors stay where they are."""
    per_id = frame.groupBy("query_id").agg(
        F.count(F.lit(1)).alias("n"),
        F.min(F.when(F.col("problem").isNotNull(), F.col("qpos"))).alias("first_bad"),
    )
    row = per_id.agg(
        F.sum("n").alias("n"),
        F.max("n").alias("most"),
        F.min("first_bad").alias("first_bad"),
        F.max_by("query_id", "n").alias("repeated"),
    ).first()
    if row["first_bad"] is not None:
        problem = frame.where(F.col("qpos") == row["first_bad"]).select("problem").first()[0]
        path, _, rest = problem.partition(": ")
        where, _, reason = rest.rpartition(": ")
        raise InputError(path, reason, where or None)
    if not row["n"]:
        raise InputError(source, "the query side has no descriptors")
    if row["most"] > 1:
        raise InputError(
            source,
            f"image id '{row['repeated']}' appears {row['most']} times in the query descriptors",
        )
    return int(row["n"])
