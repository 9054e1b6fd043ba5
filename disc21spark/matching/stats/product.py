"""The bootstrap's weighted counts as an exact sparse product: per level and resample,
the sum of whole counts times the queries' Poisson weights.

The product is scipy's compiled kernel (``csc_matvecs``: for each query, its weights
added into the rows of its cells), loaded alone: importing ``scipy.sparse`` runs
scipy's array-API layer, which imports every numpy submodule (f2py among them), two to
three times as long as the product of a 500,000-pair file. The rows' counts are split so
that the products stay exact in int16 (four times as fast as float64); counts that do
not fit are multiplied in float64, exact below 2^53. Sums of whole numbers do not depend
on the order they are added in.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
from pathlib import Path

import numpy as np

from disc21spark.matching.inprocess.arrays import factorize
from disc21spark.matching.stats.weights import MAX_WEIGHT, Table, in_table_order, poisson_weights

# a run of a level's entries sums to at most SMALL_SUM, so that times a weight (at most
# MAX_WEIGHT) it stays below 2^15; an entry holds at most SMALL_CELL
SMALL_SUM = (2**15 - 1) // MAX_WEIGHT
SMALL_CELL = SMALL_SUM // 2
# (query, resample) weights multiplied at once: 64 MB of int16; the float64 product's
# CHUNK resamples at a time
SMALL_ENTRIES = 32 << 20
CHUNK = 256


def weighted_sums(
    level: np.ndarray,
    keys: np.ndarray,
    many: np.ndarray,
    n_levels: int,
    resamples: int,
    table: Table | None = None,
) -> np.ndarray:
    """int64 (n_levels, resamples): per level, the sum over its rows of ``many`` times the
    weight of the row's query in each resample (``weights.poisson_weights``, rows of
    ``table`` when it holds them). ``level`` int (n,) in [0, n_levels); ``keys`` uint64
    (n,); ``many`` float64 (n,), whole numbers (others are summed in float64 and
    rounded)."""
    out = np.zeros((n_levels, resamples), dtype=np.int64)
    if not len(level) or not resamples:
        return out
    unique, column = in_table_order(*factorize(keys), table)
    q = len(unique)
    # level-major: each level's entries together (a radix sort when the levels fit 16 bits)
    order = np.argsort(level.astype(np.uint16 if n_levels < 2**16 else np.int64), kind="stable")
    level, column, many = level[order], column[order].astype(np.int64), many[order]
    small = many.min() >= 0 and many.max() <= SMALL_CELL and np.array_equal(many, np.rint(many))
    row = _runs(level, many) if small else level
    n_rows = int(row[-1]) + 1
    # query-major for the kernel: each query's weights read once
    by_query = np.argsort(column.astype(np.uint16) if q < 2**16 else column, kind="stable")
    starts = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(np.bincount(column, minlength=q), out=starts[1:])
    matrix = (starts, row[by_query], many[by_query].astype(np.int16 if small else np.float64))
    # each level's rows added up: its first row, then the few more of a level of many
    first = np.r_[0, np.flatnonzero(np.diff(row)) + 1]
    rows, row_level = row[first], level[first]
    lead = np.r_[True, row_level[1:] != row_level[:-1]]
    step = max(CHUNK, SMALL_ENTRIES // q) if small else CHUNK
    for start in range(0, resamples, step):
        stop = min(start + step, resamples)
        w = poisson_weights(unique, start, stop, table=table).astype(matrix[2].dtype)
        part = np.zeros((n_rows, stop - start), dtype=w.dtype)
        _kernels().csc_matvecs(n_rows, q, stop - start, *matrix, w.ravel(), part.ravel())
        part = part if small else np.rint(part)
        out[row_level[lead], start:stop] = part[rows[lead]]
        np.add.at(out[:, start:stop], row_level[~lead], part[rows[~lead]])
    return out


def _runs(level: np.ndarray, many: np.ndarray) -> np.ndarray:
    """int64 (n,): the run of each entry (sorted by level, each at most SMALL_CELL): each
    level's entries cut into runs summing to at most SMALL_SUM, numbered in order."""
    data = many.astype(np.int64)
    before = np.cumsum(data) - data
    starts = np.flatnonzero(np.r_[True, level[1:] != level[:-1]])
    # the level's sum before each entry
    before -= np.repeat(before[starts], np.diff(np.r_[starts, len(level)]))
    # a run holds the entries starting below a multiple of this: at most SMALL_SUM in all
    piece = before // (SMALL_SUM + 1 - SMALL_CELL)
    first = np.ones(len(data), dtype=bool)
    first[1:] = (level[1:] != level[:-1]) | (piece[1:] != piece[:-1])
    return np.cumsum(first) - 1


@functools.cache
def _kernels():
    """scipy's ``sparse._sparsetools`` extension, loaded from its file without importing
    ``scipy.sparse`` (whose import is longer than the product); the ordinary import when
    the file is not where scipy keeps it."""
    spec = importlib.util.find_spec("scipy")  # finds the package without importing it
    folder = Path(spec.submodule_search_locations[0]) / "sparse" if spec else None
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"_sparsetools{suffix}" if folder else None
        if path is not None and path.is_file():
            name = "scipy.sparse._sparsetools"
            loader = importlib.machinery.ExtensionFileLoader(name, str(path))
            module = importlib.util.module_from_spec(
                importlib.util.spec_from_file_location(name, str(path), loader=loader)
            )
            loader.exec_module(module)
            return module
    from scipy.sparse import _sparsetools

    return _sparsetools
