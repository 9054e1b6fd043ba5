"""The bootstrap's weighted counts as an exact product: per level and resample, the sum
of whole counts times the queries' Poisson weights, with numpy alone.

A sparse (level, query) matrix times the weights was scipy's product; its import (which
pulls numpy's f2py) took longer than the product. Here the levels are cut into blocks,
each a dense (levels, queries) matrix multiplied by the weights in one BLAS product: the
few levels holding most rows (the scores just behind the lowest true scores) form a block
over every query, the many thin levels blocks over the few queries they meet. Products
and sums of whole numbers are exact in float32 below 2^24 and in float64 below 2^53, so
the counts are the same integers whatever order the product adds them in.
"""

from __future__ import annotations

import numpy as np

from disc21spark.matching.arrays import factorize
from disc21spark.matching.stats.weights import MAX_WEIGHT, poisson_weights

# a level of at least 1/THICK_SHARE of the queries' rows is multiplied by every query's
# weights (one block of all such levels); thinner ones, THIN_LEVELS at a time, by the
# weights of the queries they meet only (a matrix product costs levels × queries)
THICK_SHARE = 16
THIN_LEVELS = 8
# float32 sums of whole numbers are exact while they stay below this
FLOAT32_EXACT = 2**24
# (query, resample) weights drawn or looked up at once (uint8: 32 MB), and converted at
# once for a block over every query (float32: 32 MB)
DRAWN = 32 << 20
CONVERTED = 8 << 20


def weighted_sums(
    level: np.ndarray, keys: np.ndarray, many: np.ndarray, n_levels: int, resamples: int
) -> np.ndarray:
    """int64 (n_levels, resamples): per level, the sum over its rows of ``many`` times the
    weight of the row's query in each resample (``weights.poisson_weights``). ``level``
    int (n,) in [0, n_levels); ``keys`` uint64 (n,); ``many`` float64 (n,), whole numbers
    (others are summed in float64 and rounded)."""
    out = np.zeros((n_levels, resamples), dtype=np.int64)
    if not len(level) or not resamples:
        return out
    unique, column = factorize(keys)
    q = len(unique)
    blocks = [_block(level[r], column[r], many[r], q) for r in _blocks(level, n_levels, q)]
    step = max(1, DRAWN // q)
    for start in range(0, resamples, step):
        stop = min(start + step, resamples)
        w = poisson_weights(unique, start, stop)  # uint8 (Q, stop - start)
        for levels, columns, matrix in blocks:
            if columns is not None:
                part = matrix @ w[columns].astype(matrix.dtype)
                out[levels, start:stop] = _whole(part)
                continue
            wide = max(1, CONVERTED // q)
            for first in range(0, stop - start, wide):
                part = matrix @ w[:, first : first + wide].astype(matrix.dtype)
                out[levels, start + first : start + first + part.shape[1]] = _whole(part)
    return out


def _blocks(level: np.ndarray, n_levels: int, n_queries: int) -> list[np.ndarray]:
    """The rows of each block (int64 index arrays): first every level of at least
    n_queries / THICK_SHARE rows, then the others in decreasing order of rows,
    THIN_LEVELS a block."""
    rows = np.bincount(level, minlength=n_levels)
    used = np.flatnonzero(rows)
    order = used[np.argsort(-rows[used], kind="stable")]
    thick = int(np.count_nonzero(rows[order] * THICK_SHARE >= n_queries))
    block = np.empty(n_levels, dtype=np.int64)
    block[order[:thick]] = 0
    block[order[thick:]] = 1 + np.arange(len(order) - thick) // THIN_LEVELS
    n = int(block[order[-1]]) + 1
    of_row = block[level]
    by_block = np.argsort(of_row, kind="stable")
    bounds = np.searchsorted(of_row[by_block], np.arange(n + 1))
    return [by_block[bounds[i] : bounds[i + 1]] for i in range(n) if bounds[i + 1] > bounds[i]]


def _block(level: np.ndarray, column: np.ndarray, many: np.ndarray, n_columns: int) -> tuple:
    """One block's rows as (its levels int64 (L,), the columns it meets int64 (C,) or None
    for all n_columns, its dense counts (L, C) float32 when every sum times MAX_WEIGHT
    stays below FLOAT32_EXACT and the counts are whole, else float64)."""
    levels, row = np.unique(level, return_inverse=True)
    row = row.reshape(-1)
    columns = None
    if len(level) < n_columns // 2:  # a thin block: the queries it meets
        columns, column = np.unique(column, return_inverse=True)
        n_columns = len(columns)
    cells = row * n_columns + column.reshape(-1)
    matrix = np.bincount(cells, weights=many, minlength=len(levels) * n_columns)
    largest = np.bincount(row, weights=np.abs(many)).max()
    exact = largest * MAX_WEIGHT < FLOAT32_EXACT and np.array_equal(many, np.rint(many))
    matrix = matrix.reshape(len(levels), n_columns).astype(np.float32 if exact else np.float64)
    return levels, columns, matrix


def _whole(part: np.ndarray) -> np.ndarray:
    """int64: a product's sums (whole numbers when the counts were)."""
    return (part if part.dtype == np.float32 else np.rint(part)).astype(np.int64)
