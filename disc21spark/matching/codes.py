"""Integer codes for one submission's ids that stay the same from batch to batch.

The batched in-process engine (``batched.py``) labels a file a batch at a time, so it
cannot dictionary-encode the whole file at once as ``local.encode`` does. A query is
coded by its index in the ground truth (an unknown one after them, in order of first
appearance); a reference by its order of first appearance. A pair's key is the two
codes in one uint64 (query code in the high 32 bits), equal for equal pairs in any batch.
Nothing here imports PySpark.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from disc21spark.matching.arrays import numbers, strings
from disc21spark.matching.local_read import Pairs
from disc21spark.matching.model import GroundTruth

LOW = np.uint64(32)


def index_in(values: pa.Array, value_set: pa.Array) -> np.ndarray:
    """int64 (n,): the index of each of ``values`` in ``value_set``, -1 where absent."""
    found = pc.index_in(values, value_set=value_set)
    missing = pa.Array.from_buffers(
        pa.int32(), len(found), [None, pa.py_buffer(np.full(len(found), -1, dtype=np.int32))]
    )
    return numbers(pc.coalesce(found, missing)).astype(np.int64)


class Dictionary:
    """Distinct strings in order of first appearance over batches, with the rows of each."""

    def __init__(self) -> None:
        self.values = strings([])
        self.rows = np.zeros(0, dtype=np.int64)

    def codes(self, column: pa.Array) -> tuple[np.ndarray, pa.Array, np.ndarray]:
        """(int64 code of each row, the batch's distinct values, int64 each row's index
        among them)."""
        batch = pc.dictionary_encode(column)
        code = index_in(batch.dictionary, self.values)
        new = code < 0
        if new.any():
            code[new] = len(self.values) + np.arange(int(new.sum()))
            self.values = pa.concat_arrays([self.values, batch.dictionary.filter(mask(new))])
            self.rows = np.concatenate([self.rows, np.zeros(int(new.sum()), np.int64)])
        at = numbers(batch.indices).astype(np.int64)
        per_row = code[at]
        self.rows += np.bincount(per_row, minlength=len(self.values))
        return per_row, batch.dictionary, at


def mask(flags: np.ndarray) -> pa.Array:
    """An Arrow boolean array of numpy's bools (no pandas probe)."""
    bits = np.packbits(flags, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(flags), [None, pa.py_buffer(bits)])


class BatchEncoder:
    """Labels and codes for one submission's batches against ``gt``; keeps the true
    pairs, the distinct ids and the rows of each, for the counts and the warnings."""

    def __init__(self, gt: GroundTruth) -> None:
        self.known = strings(gt.query_ids)
        refs = np.unique(gt.positive_references.astype(str))
        self.positive_refs = strings(refs)
        positive_query = index_in(strings(gt.positive_queries), self.known)
        positive_ref = np.searchsorted(refs, gt.positive_references.astype(str))
        self.width = max(len(refs), 1)
        self.positive_keys = positive_query * self.width + positive_ref
        self.query_rows = np.zeros(len(self.known), dtype=np.int64)
        self.unknown = Dictionary()
        self.references = Dictionary()
        self.unknown_rows = 0
        self._true: list[tuple[np.ndarray, np.ndarray]] = []

    def encode(self, pairs: Pairs) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(int64 query index in the ground truth, -1 when unknown; bool label; float64
        score; uint64 pair key) of each row of one checked batch."""
        queries = pc.dictionary_encode(pairs.query)
        query = index_in(queries.dictionary, self.known)[numbers(queries.indices)]
        unknown = query < 0
        code = query.copy()
        if unknown.any():
            self.unknown_rows += int(unknown.sum())
            unknown_ids = pairs.query.filter(mask(unknown))
            code[unknown] = len(self.known) + self.unknown.codes(unknown_ids)[0]
        self.query_rows += np.bincount(query[~unknown], minlength=len(self.known))
        reference, distinct, at = self.references.codes(pairs.reference)
        positive = index_in(distinct, self.positive_refs)[at]
        label = np.zeros(len(query), dtype=bool)
        matched = np.flatnonzero((query >= 0) & (positive >= 0))
        label[matched] = np.isin(
            query[matched] * self.width + positive[matched], self.positive_keys
        )
        self._true.append((query[label], pairs.score[label]))
        key = (code.astype(np.uint64) << LOW) | reference.astype(np.uint64)
        return query, label, pairs.score, key

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

    def ids_of(self, key: int) -> tuple[str, str]:
        """The (query id, reference id) of a pair key."""
        query, reference = key >> 32, key & 0xFFFFFFFF
        known = len(self.known)
        q = self.known[query] if query < known else self.unknown.values[query - known]
        return q.as_py(), self.references.values[reference].as_py()

    def id_counts(self) -> tuple[tuple, tuple]:
        """((query ids, rows of each), (reference ids, rows of each)), for ``coverage``."""
        queries = pa.concat_arrays([self.known, self.unknown.values])
        rows = np.concatenate([self.query_rows, self.unknown.rows])
        return (queries, rows), (self.references.values, self.references.rows)
