"""How an index reaches the executors, and how a Python worker opens it.

A flat (exact) index travels as files, never through the JVM: the side's raw float32
vectors (side.py wrote them once on the driver's disk), its ids and its id-order ranks.
Every Python worker memory-maps them, so a machine holds one copy in its page cache
however many workers search it. Where the executors share the driver's file system (a
local master) they open the driver's files in place; elsewhere Spark ships them once per
executor (SparkContext.addFile) and a worker opens its executor's copy (SparkFiles).

Any other index (a trained codec, IVF, HNSW...) is FAISS's serialised bytes, broadcast
in shards small enough for the driver's heap to hold one at a time.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pyspark import Broadcast, SparkContext
from pyspark.sql import SparkSession

from disc21spark.core.errors import InputError
from disc21spark.descriptors import spec as descriptor_spec
from disc21spark.descriptors.side import Side

# Per Python worker and per role (the reference index or shard, the background set):
# the searcher in use and its token. Spark reuses workers between tasks, so a worker
# opens an index once, not once per task; a worker that moves on to another shard drops
# the previous one, so a sharded search holds one shard per worker, not all of them.
_SEARCHERS: dict[str, tuple[str, descriptor_spec.Searcher]] = {}
# a broadcast shard may take this share of the driver's heap: the JVM serialises a
# broadcast whole in memory before it stores its pieces
HEAP_SHARE = 4


@dataclass(frozen=True)
class IndexFiles:
    """A side's vectors (raw float32 [rows, dim]), ids (.npy of str) and ranks (.npy of
    int64) as files on the driver; ``spark_files``: the executors open the copies Spark
    shipped them (by file name) instead of the driver's paths."""

    vectors: str
    ids: str
    ranks: str
    rows: int
    dim: int
    spark_files: bool

    def where(self, path: str) -> str:
        if self.spark_files:
            from pyspark import SparkFiles, TaskContext

            if TaskContext.get() is not None:
                return SparkFiles.get(Path(path).name)
        return path


@dataclass(frozen=True)
class FileShard:
    """Rows [start, stop) of a flat index shipped as files."""

    token: str
    files: IndexFiles
    start: int
    stop: int
    metric: str
    max_norm: float  # largest_norm of the shard's vectors, computed once on the driver

    @property
    def size(self) -> int:
        return (self.stop - self.start) * self.files.dim * 4

    def load(self) -> descriptor_spec.Searcher:
        f = self.files
        vectors = np.memmap(f.where(f.vectors), np.float32, "r", shape=(f.rows, f.dim))
        rows = slice(self.start, self.stop)
        ranks = np.load(f.where(f.ranks), mmap_mode="r")[rows]
        s = descriptor_spec.flat_searcher(vectors[rows], self.metric, ranks, self.max_norm)
        s.ids = np.load(f.where(f.ids), mmap_mode="r")[rows]
        return s


@dataclass(frozen=True)
class BroadcastShard:
    """A FAISS index (any kind) broadcast as its serialised bytes."""

    token: str
    payload: Broadcast  # (index bytes, metric, ranks, ids)
    size: int

    def load(self) -> descriptor_spec.Searcher:
        blob, metric, ranks, ids = self.payload.value
        s = descriptor_spec.searcher(blob, metric, ranks)
        s.ids = ids
        return s


Shard = FileShard | BroadcastShard


def searcher_of(shard: Shard, role: str) -> descriptor_spec.Searcher:
    """The worker's searcher for ``shard``; the pairs leave the worker with their
    reference ids (Searcher.ids), so no join is needed later."""
    held = _SEARCHERS.get(role)
    if held is not None and held[0] == shard.token:
        return held[1]
    _SEARCHERS.pop(role, None)  # free the previous one before opening the next
    s = shard.load()
    _SEARCHERS[role] = (shard.token, s)
    return s


def shares_driver_files(sc: SparkContext) -> bool:
    """Whether the executors open the driver's files in place: they do under a local
    master (one machine, one file system); any other master gets copies."""
    return sc.master.startswith("local")


def driver_heap(sc: SparkContext) -> int:
    """The driver JVM's largest heap, in bytes."""
    return int(sc._jvm.java.lang.Runtime.getRuntime().maxMemory())


def shard_limit(spark: SparkSession, empty, broadcast_limit: int) -> tuple[int, str]:
    """The largest shard, in bytes, and the setting that bounds it: --broadcast-limit,
    or for an index that is broadcast, the driver's heap when that is smaller."""
    if descriptor_spec.is_flat(empty):
        return broadcast_limit, f"--broadcast-limit {broadcast_limit}"
    room = driver_heap(spark.sparkContext) // HEAP_SHARE
    if room < broadcast_limit:
        return room, "spark.driver.memory (spark-submit --driver-memory)"
    return broadcast_limit, f"--broadcast-limit {broadcast_limit}"


def shard_count(empty_index, vectors: np.ndarray, limit: int) -> int:
    """How many shards keep each under ``limit`` bytes; ValueError if none can."""
    n = len(vectors)
    if descriptor_spec.is_flat(empty_index):
        base, per_vector = 0, vectors.shape[1] * 4.0
    else:
        base = len(descriptor_spec.serialize(empty_index))
        m = min(n, 4096)
        probe = len(descriptor_spec.serialize(descriptor_spec.filled(empty_index, vectors[:m])))
        per_vector = (probe - base) / max(m, 1)
    room = limit - base
    if room < per_vector:
        raise ValueError(
            f"{limit:,} bytes cannot hold even one reference ({per_vector:,.0f} bytes)"
        )
    return max(1, math.ceil(n * per_vector / room))


def ship(
    spark: SparkSession, empty, side: Side, metric: str, ranks: np.ndarray, shards: int
) -> list[Shard]:
    """``side`` indexed as ``empty`` (a trained, empty index) in ``shards`` shards of
    consecutive rows. A flat index needs ``side`` stored (Side.store): its files travel."""
    bounds = [round(i * len(side.ids) / shards) for i in range(shards + 1)]
    pieces = list(zip(bounds[:-1], bounds[1:]))
    ids = side.ids.astype(str)
    if descriptor_spec.is_flat(empty):
        files = _index_files(spark.sparkContext, side, ids, ranks)
        return [
            FileShard(
                uuid.uuid4().hex,
                files,
                a,
                b,
                metric,
                descriptor_spec.largest_norm(side.vectors[a:b]),
            )
            for a, b in pieces
        ]
    return [
        _broadcast(spark.sparkContext, empty, side, metric, ranks, ids, a, b) for a, b in pieces
    ]


def _index_files(sc: SparkContext, side: Side, ids: np.ndarray, ranks: np.ndarray) -> IndexFiles:
    if side.store is None:
        raise ValueError("a flat index travels as files: read its side with a store")
    stem = str(side.store)[: -len(side.store.suffix)]
    names = stem + "-ids.npy", stem + "-ranks.npy"
    np.save(names[0], ids)
    np.save(names[1], np.asarray(ranks, dtype=np.int64))
    spark_files = not shares_driver_files(sc)
    if spark_files:
        for path in (str(side.store), *names):
            sc.addFile(path)
    rows, dim = side.vectors.shape
    return IndexFiles(str(side.store), names[0], names[1], rows, dim, spark_files)


def _broadcast(sc: SparkContext, empty, side: Side, metric, ranks, ids, a: int, b: int):
    from py4j.protocol import Py4JJavaError

    blob = descriptor_spec.serialize(descriptor_spec.filled(empty, side.vectors[a:b]))
    try:
        payload = sc.broadcast((blob, metric, ranks[a:b], ids[a:b]))
    except Py4JJavaError:
        heap = driver_heap(sc)
        raise InputError(
            "spark.driver.memory",
            f"the driver's {heap / 2**20:,.0f} MiB heap cannot hold a broadcast shard of "
            f"{len(blob) / 2**20:,.0f} MiB; raise spark.driver.memory "
            "(spark-submit --driver-memory) or lower --broadcast-limit",
        ) from None
    return BroadcastShard(uuid.uuid4().hex, payload, len(blob))
