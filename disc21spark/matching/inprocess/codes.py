"""Integer codes for one submission's ids that stay the same from batch to batch.

The batched in-process engine (``batched.py``) labels a file a batch at a time, so it
cannot dictionary-encode the whole file at once. A query is
coded by its index in the ground truth (an unknown one after them, in order of first
appearance). A reference needs no code of its own: the label asks only whether it is
one of the ground truth's positive references, and a pair's key is a 64-bit hash of its
query's code and its reference's bytes (``string_hashes``), equal for equal pairs in
any batch. Two different pairs may share a key (about one chance in 2^64 / n² for n
pairs): a repeated key is a suspect, which ``batched.py`` checks on the ids themselves.
Nothing here imports PySpark.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from disc21spark.matching import kernel
from disc21spark.matching.inprocess.arrays import compute, numbers, strings
from disc21spark.matching.inprocess.arrays import offsets as offsets_of
from disc21spark.matching.inprocess.local_read import Pairs
from disc21spark.matching.model import GroundTruth


def index_in(values: pa.Array, value_set: pa.Array) -> np.ndarray:
    """int64 (n,): the index of each of ``values`` in ``value_set``, -1 where absent."""
    found = compute("index_in", values, value_set=value_set)
    missing = pa.Array.from_buffers(
        pa.int32(), len(found), [None, pa.py_buffer(np.full(len(found), -1, dtype=np.int32))]
    )
    return numbers(compute("coalesce", found, missing)).astype(np.int64)


class Dictionary:
    """Distinct strings in order of first appearance over batches, with the rows of each."""

    def __init__(self) -> None:
        self.values = strings([])
        self.rows = np.zeros(0, dtype=np.int64)

    def codes(self, column: pa.Array) -> np.ndarray:
        """int64 (n,): the code of each row, new values added."""
        batch = compute("dictionary_encode", column)
        code = index_in(batch.dictionary, self.values)
        new = code < 0
        if new.any():
            code[new] = len(self.values) + np.arange(int(new.sum()))
            self.values = pa.concat_arrays([self.values, batch.dictionary.filter(mask(new))])
            self.rows = np.concatenate([self.rows, np.zeros(int(new.sum()), np.int64)])
        per_row = code[numbers(batch.indices)]
        self.rows += np.bincount(per_row, minlength=len(self.values))
        return per_row


def mask(flags: np.ndarray) -> pa.Array:
    """An Arrow boolean array of numpy's bools (no pandas probe)."""
    bits = np.packbits(flags, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(flags), [None, pa.py_buffer(bits)])


# splitmix64's constants: a finalizer that spreads every input bit over the output
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1, MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
# the polynomial hash's base (odd) and the powers of it for the bytes of a string
BASE = np.uint64(0x100000001B3)


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer of uint64 values (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x.copy()
        x ^= x >> np.uint64(30)
        x *= MIX1
        x ^= x >> np.uint64(27)
        x *= MIX2
        x ^= x >> np.uint64(31)
    return x


# a string of at most SHORT bytes (every DISC21 id) is hashed from its bytes read as two
# little-endian words, a longer one by a polynomial: each by its own bytes alone, so an
# id gets the same hash in every batch
SHORT = 16


def string_hashes(values: pa.Array) -> np.ndarray:
    """uint64 (n,): a hash of each string's bytes and length (``mix`` of its words, or of
    the polynomial Σ (byte + 1) · BASE^position mod 2^64 for a long one)."""
    offsets = offsets_of(values)
    lengths = np.diff(offsets).astype(np.int64)
    short = lengths <= SHORT
    if short.all():
        return _short_hashes(values, lengths)
    out = np.empty(len(lengths), dtype=np.uint64)
    out[short] = _short_hashes(values.filter(mask(short)), lengths[short])
    first, last = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(values.buffers()[2], np.uint8)[first:last]
    starts = (offsets[:-1] - first).astype(np.int64)
    out[~short] = _long_hashes(data, starts[~short], lengths[~short])
    return out


def _short_hashes(values: pa.Array, lengths: np.ndarray) -> np.ndarray:
    """Strings of at most SHORT bytes: their bytes padded with zero bytes to SHORT
    (Arrow's byte-wise ``ascii_rpad``), read as two words, mixed with the length (no two
    such strings alike before ``mix``)."""
    padded = compute("ascii_rpad", values, width=SHORT, padding="\x00")
    offsets = offsets_of(padded)
    data = np.frombuffer(padded.buffers()[2], np.uint8) if len(padded) else np.zeros(0, np.uint8)
    words = data[offsets[0] : offsets[-1]].view(np.uint64).reshape(len(padded), SHORT // 8)
    with np.errstate(over="ignore"):
        return mix(mix(lengths.astype(np.uint64) * GOLDEN + words[:, 0]) ^ words[:, 1])


def _long_hashes(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Strings longer than SHORT: the polynomial of their bytes, mixed with the length."""
    position = np.arange(int(lengths.sum()), dtype=np.int64)
    begins = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    position -= np.repeat(begins, lengths)
    with np.errstate(over="ignore"):
        powers = np.ones(int(lengths.max()), dtype=np.uint64)
        powers[1:] = np.cumprod(np.full(len(powers) - 1, BASE, dtype=np.uint64))
        byte = data[np.repeat(starts, lengths) + position].astype(np.uint64)
        total = np.add.reduceat((byte + np.uint64(1)) * powers[position], begins)
        return mix(total ^ (lengths.astype(np.uint64) * GOLDEN))


class BatchEncoder:
    """Labels and codes for one submission's batches against ``gt``; keeps the true
    pairs, the distinct unknown query ids and the rows of each, for the counts and the
    warnings."""

    def __init__(self, gt: GroundTruth) -> None:
        self.known = strings(gt.query_ids)
        refs = kernel.distinct(gt.positive_references.astype(str))
        self.positive_refs = strings(refs)
        positive_query = index_in(strings(gt.positive_queries), self.known)
        positive_ref = np.searchsorted(refs, gt.positive_references.astype(str))
        self.width = max(len(refs), 1)
        self.positive_keys = kernel.distinct(positive_query * self.width + positive_ref)
        self.query_rows = np.zeros(len(self.known), dtype=np.int64)
        self.unknown = Dictionary()
        self.unknown_rows = 0
        self._true: list[tuple[np.ndarray, np.ndarray]] = []

    def encode(self, pairs: Pairs) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(int64 query index in the ground truth, -1 when unknown; bool label; float64
        score; uint64 pair key) of each row of one checked batch."""
        queries = compute("dictionary_encode", pairs.query)
        query = index_in(queries.dictionary, self.known)[numbers(queries.indices)]
        unknown = query < 0
        code = query.copy()
        if unknown.any():
            self.unknown_rows += int(unknown.sum())
            unknown_ids = pairs.query.filter(mask(unknown))
            code[unknown] = len(self.known) + self.unknown.codes(unknown_ids)
        self.query_rows += np.bincount(query[~unknown], minlength=len(self.known))
        # each row looked up among the few positive references (no table of every id)
        positive = index_in(pairs.reference, self.positive_refs)
        label = np.zeros(len(query), dtype=bool)
        matched = np.flatnonzero((query >= 0) & (positive >= 0))
        label[matched] = kernel.among(
            query[matched] * self.width + positive[matched], self.positive_keys
        )
        self._true.append((query[label], pairs.score[label]))
        return query, label, pairs.score, self._keys(code, pairs.reference)

    def keys(self, pairs: Pairs) -> np.ndarray:
        """uint64 (n,): the pair keys of a batch already encoded (nothing is counted)."""
        query = index_in(pairs.query, self.known)
        unknown = query < 0
        if unknown.any():
            found = index_in(pairs.query.filter(mask(unknown)), self.unknown.values)
            query[unknown] = len(self.known) + found
        return self._keys(query, pairs.reference)

    @staticmethod
    def _keys(code: np.ndarray, reference: pa.Array) -> np.ndarray:
        with np.errstate(over="ignore"):
            return mix(string_hashes(reference) + code.astype(np.uint64) * GOLDEN)

    def true_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(int64 query indices, float64 scores) of every true pair, in file order."""
        if not self._true:
            return np.zeros(0, np.int64), np.zeros(0)
        return (
            np.concatenate([q for q, _ in self._true]),
            np.concatenate([s for _, s in self._true]),
        )

    def distinct_queries(self) -> int:
        return int(np.count_nonzero(self.query_rows)) + len(self.unknown.values)

    def query_counts(self) -> tuple[pa.Array, np.ndarray]:
        """(query ids, rows of each): the ground truth's, then the unknown ones."""
        queries = pa.concat_arrays([self.known, self.unknown.values])
        return queries, np.concatenate([self.query_rows, self.unknown.rows])
