"""The bootstrap's partial counts between processes: small rows that add up anywhere.

A partition's counts for one submission are a list of additive int64 arrays (the
non-matches per level and resample, their optimistic counts, the groups' counts:
``weighted.miss_counts``, ``groups.code_miss_counts``). Sent as one row per partition they
held levels × resamples integers, 30 MB at 50M pairs (3,765 levels × 1,000 resamples),
and a 1 GB driver ran out of heap holding two of them (docs/benchmarks.md). Here the
arrays are flattened and cut into blocks of at most ``BLOCK`` integers, each packed in the
narrowest integer type that holds its differences from its least value: rows of a few
tens of kilobytes, which Spark adds up per (submission, block) on the executors, so that
the driver receives each block once, summed. Integer sums: any order, the same counts.
Nothing here imports PySpark.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

# integers per block: 256 KB as int64, a row the JVM copies without strain
BLOCK = 1 << 15
_NARROW = (np.int8, np.int16, np.int32, np.int64)


def count_shapes(levels: int, code_levels: Sequence[int] | None, resamples: int) -> list:
    """The shapes of one submission's counts, in their order: (T, B) and (T,) for its
    ``levels`` T, then, with groups (``code_levels``: T_c per code), (G + 1,) and per
    code (T_c, B), (T_c,)."""
    shapes: list[tuple[int, ...]] = [(levels, resamples), (levels,)]
    if code_levels is not None:
        shapes.append((len(code_levels),))
        for t in code_levels:
            shapes += [(t, resamples), (t,)]
    return shapes


def blocks(parts: Iterable[np.ndarray], size: int = BLOCK) -> Iterator[tuple[int, bytes]]:
    """(block number, packed bytes) of the int ``parts`` flattened one after another, in
    blocks of ``size`` integers (the last one shorter)."""
    flat = [np.asarray(p, dtype=np.int64).reshape(-1) for p in parts]
    whole = np.concatenate(flat) if flat else np.zeros(0, np.int64)
    for number, start in enumerate(range(0, len(whole), size)):
        yield number, pack(whole[start : start + size])


def pack(values: np.ndarray) -> bytes:
    """int64 (n,) as bytes: one byte giving the width, the least value (int64), then
    every value's difference from it in the narrowest integer type holding them all."""
    base = int(values.min()) if len(values) else 0
    diff = values - base
    top = int(diff.max()) if len(diff) else 0
    narrow = next(n for n in _NARROW if top <= np.iinfo(n).max)
    width = np.dtype(narrow).itemsize
    return bytes([width]) + np.int64(base).tobytes() + diff.astype(narrow).tobytes()


def unpack(data: bytes) -> np.ndarray:
    """``pack``'s bytes back as a new int64 (n,) array."""
    width = data[0]
    base = np.frombuffer(data, np.int64, 1, offset=1)[0]
    return np.frombuffer(data, np.dtype(f"i{width}"), offset=9).astype(np.int64) + base


def total(packed: Iterable[bytes]) -> np.ndarray:
    """int64 (n,): the sum of packed blocks of one length. Raises ValueError for none."""
    out = None
    for data in packed:
        values = unpack(data)
        out = values if out is None else np.add(out, values, out=out)
    if out is None:
        raise ValueError("no block to add")
    return out


def add(packed: Iterable[bytes]) -> bytes:
    """The sum of packed blocks of one length, packed (an executor's, sent on)."""
    return pack(total(packed))


def assemble(summed: dict[int, np.ndarray], shapes: Sequence[tuple[int, ...]]) -> list:
    """The int64 arrays of ``shapes`` from every block of one submission (number ->
    int64 values). Raises ValueError when a block is missing or the sizes disagree."""
    if sorted(summed) != list(range(len(summed))):
        raise ValueError(f"blocks {sorted(summed)} are not 0 … {len(summed) - 1}")
    whole = np.concatenate([summed[i] for i in range(len(summed))] or [np.zeros(0, np.int64)])
    sizes = [int(np.prod(shape)) for shape in shapes]
    if sum(sizes) != len(whole):
        raise ValueError(f"{len(whole)} counts for shapes {list(shapes)}")
    edges = np.cumsum([0, *sizes])
    return [whole[a:b].reshape(shape) for a, b, shape in zip(edges, edges[1:], shapes)]
