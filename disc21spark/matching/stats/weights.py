"""Resample weights: a seeded function of (seed, query id, resample index).

Each query of the ground truth gets, in resample ``b``, a Poisson(1) count: how many
times the query (with all its predictions and positives) is drawn. The Poisson bootstrap
(Hanley & MacGibbon 2006; Chamandy et al. 2012, "Estimating uncertainty for massive
data streams") draws each unit on its own, so no process needs to see every query: an
executor computes the weights of its own rows and the partial counts add up to the
whole. The draw is a counter-based generator, not a stream: the query id is hashed with
the seed (BLAKE2b, 64 bits), the hash plus the resample index goes through SplitMix64's
finaliser, and the top 53 bits are compared with the Poisson(1) distribution function.
Nothing depends on the order rows come in, on partitions or on the engine, and every
submission scored with one seed meets the same resamples.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, localcontext

import numpy as np

# a query drawn more often than this has probability below 1e-35 per draw
MAX_WEIGHT = 32
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)


def _poisson_thresholds() -> np.ndarray:
    """uint64 (MAX_WEIGHT,): floor(F(k) · 2^53) for the Poisson(1) distribution function F,
    computed in 50-digit decimals so that no platform's ``exp`` decides a weight."""
    with localcontext() as ctx:
        ctx.prec = 50
        term = Decimal(-1).exp()
        total, out = Decimal(0), []
        for k in range(MAX_WEIGHT):
            total += term
            out.append(int(total * (1 << 53)))
            term /= k + 1
    return np.array(out, dtype=np.uint64)


THRESHOLDS = _poisson_thresholds()
SCALED = THRESHOLDS << np.uint64(11)  # the thresholds on the finaliser's whole 64 bits


def query_keys(query_ids: Iterable[object], seed: int) -> np.ndarray:
    """uint64 (n,): the seeded 64-bit key of each query id (its text, UTF-8)."""
    # the keyed hash copied per id: the key's block is hashed once (2.5× faster)
    keyed = hashlib.blake2b(digest_size=8, key=str(int(seed)).encode())

    def digest(query_id: object) -> bytes:
        h = keyed.copy()
        h.update(str(query_id).encode())
        return h.digest()

    return np.frombuffer(b"".join(map(digest, query_ids)), dtype="<u8").astype(np.uint64)


# entries drawn at once: the generator's passes stay in the processor's cache (1 MB of
# uint64), which draws the same weights twice as fast as one pass over every key
BLOCK = 1 << 17


# threads drawing a whole table (``Table.draw``: the in-process engine's whole draw): the
# cores this process may use, at most four
DRAW_THREADS = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)

# the largest table of weights drawn ahead (keys × resamples bytes): DISC21's 50,000
# queries at 1,000 resamples fit
TABLE_MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class Table:
    """The weights of a ground truth's queries in resamples 0 … B − 1, drawn once
    (``Table.draw``) and handed to every weighing of a run, a pool or a Spark job: every
    file, board and partition meets the same queries. ``keys`` uint64 (K,), sorted and
    distinct; ``weights`` uint8 (K, B), the values a draw gives."""

    keys: np.ndarray
    weights: np.ndarray

    @classmethod
    def draw(cls, keys: np.ndarray, resamples: int) -> Table | None:
        """The table of ``keys`` (uint64, any order, repeats allowed); None when it would
        pass TABLE_MAX_BYTES (each weighing then draws its own queries' weights)."""
        keys = np.unique(np.asarray(keys, dtype=np.uint64))
        if not resamples or len(keys) * resamples > TABLE_MAX_BYTES:
            return None
        return cls(keys, poisson_weights(keys, 0, resamples, threads=DRAW_THREADS))

    def rows(self, keys: np.ndarray) -> np.ndarray | None:
        """int (len(keys),): where each key of ``keys`` is among the table's; None when
        one is not there."""
        known = self.keys
        if not len(known):
            return None if len(keys) else np.zeros(0, np.intp)
        at = np.minimum(np.searchsorted(known, keys), len(known) - 1)
        return at if np.array_equal(known[at], keys) else None


def in_table_order(
    keys: np.ndarray, column: np.ndarray, table: Table | None
) -> tuple[np.ndarray, np.ndarray]:
    """(keys, column) renumbered to ``table``'s rows (its keys, the table row of each
    entry of ``column``, int (n,) indices into ``keys``) when the table holds every key
    and they are at least half its rows: ``poisson_weights`` of the table's own keys is
    then a view of it, cast in one pass, where gathering its rows one by one (a copy,
    then the cast) was a third of a 500,000-pair file's bootstrap. Otherwise ``(keys,
    column)`` as given. The weights of a key are the same either way."""
    if table is None or 2 * len(keys) < len(table.keys):
        return keys, column
    at = table.rows(keys)
    return (keys, column) if at is None else (table.keys, at[column])


def poisson_weights(
    keys: np.ndarray, start: int, stop: int, threads: int = 1, table: Table | None = None
) -> np.ndarray:
    """uint8 (len(keys), stop - start): the weight of each key in resamples start..stop-1
    (rows of ``table`` when it holds every key and resample). ``threads``: blocks of keys
    drawn in that many threads at once (numpy leaves the GIL to them); the weights are
    the same. Raises what a thread raised."""
    if table is not None and stop <= table.weights.shape[1]:
        if keys is table.keys:
            return table.weights[:, start:stop]  # the table's own keys (``in_table_order``)
        at = table.rows(keys)
        if at is not None:
            return table.weights[at, start:stop]
    index = np.arange(start + 1, stop + 1, dtype=np.uint64) * GOLDEN
    keys = keys.astype(np.uint64)
    out = np.empty((len(keys), stop - start), dtype=np.uint8)
    step = max(1, BLOCK // max(1, stop - start))
    firsts = range(0, len(keys), step)
    # a thread for every few blocks at most: a small draw stays in the caller's thread
    threads = max(1, min(threads, len(firsts) // 4))
    failed: list[BaseException] = []

    def fill(part: range) -> None:
        try:
            for first in part:
                out[first : first + step] = _draw(keys[first : first + step], index)
        except BaseException as exc:  # handed to the caller: no block is left undrawn
            failed.append(exc)

    if threads > 1:
        import threading

        others = [
            threading.Thread(target=fill, args=(firsts[i::threads],)) for i in range(1, threads)
        ]
        for thread in others:
            thread.start()
        fill(firsts[0::threads])
        for thread in others:
            thread.join()
    else:
        fill(firsts)
    if failed:
        raise failed[0]
    return out


def _draw(keys: np.ndarray, index: np.ndarray) -> np.ndarray:
    """uint8 (len(keys), len(index)): the weights of uint64 ``keys`` in the resamples whose
    (index + 1) · GOLDEN is ``index``."""
    with np.errstate(over="ignore"):  # arithmetic modulo 2^64 is the generator's
        z = keys[:, None] + index[None, :]
        shifted = np.empty_like(z)
        for shift, factor in ((30, MIX1), (27, MIX2)):
            np.right_shift(z, np.uint64(shift), out=shifted)
            z ^= shifted
            z *= factor
        np.right_shift(z, np.uint64(31), out=shifted)
        z ^= shifted
    # z's top 53 bits reach threshold t exactly when z reaches t · 2^11 (SCALED): one
    # pass less than shifting z. The three commonest weights by comparison (95 % of
    # draws are 0, 1 or 2), the rare others by one comparison per weight among the draws
    # still reaching it (a binary search of the distribution function took longer)
    w = (z >= SCALED[0]).view(np.uint8)
    w += (z >= SCALED[1]).view(np.uint8)
    reached = z >= SCALED[2]
    w += reached.view(np.uint8)
    flat, rare = w.reshape(-1), np.flatnonzero(reached)
    value = z.reshape(-1)[rare]
    for threshold in SCALED[3:]:
        more = value >= threshold
        rare, value = rare[more], value[more]
        if not rare.size:
            break
        flat[rare] += np.uint8(1)
    return w
