"""The bootstrap in process: the in-process engine's (and so the per-file pool plan's)
intervals and group table, from the Arrow columns and integer codes it already holds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from disc21spark.matching import spec as matching_spec
from disc21spark.matching.arrays import numbers, strings
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.stats import groups, spec
from disc21spark.matching.stats.groups_table import GroupTable
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.weights import query_keys


def measure(
    query: pa.Array, e: matching_spec.Encoded, gt: GroundTruth, r: Resampling
) -> Uncertainty:
    """One submission's Uncertainty: ``query`` the Arrow query ids (n,), ``e`` the codes
    of the same rows (``matching/local.encode``)."""
    sample, _ = _sample(query, e, gt, r)
    return spec.uncertainty(sample, r)


def measure_groups(
    query: pa.Array, e: matching_spec.Encoded, gt: GroundTruth, r: Resampling
) -> GroupTable:
    """One submission's group table (``r.groups`` given), arguments as ``measure``'s."""
    sample, encoded = _sample(query, e, gt, r)
    found = pc.index_in(encoded.dictionary, value_set=strings(gt.query_ids))
    index = numbers(pc.fill_null(found, -1)).astype(np.int64)
    # each distinct query's code, then each row's: in no group when unknown
    code_of = np.where(index < 0, r.groups.none, r.groups.codes[np.maximum(index, 0)])
    code = code_of[_codes(encoded)] if len(encoded.indices) else np.zeros(0, np.int64)
    return groups.measure(sample, code, gt, r.groups, r)


def _codes(encoded: pa.DictionaryArray) -> np.ndarray:
    indices = encoded.indices  # int32, no nulls; read from its buffer (to_numpy probes pandas)
    return np.frombuffer(indices.buffers()[1], np.int32, len(indices), indices.offset * 4)


def _sample(
    query: pa.Array, e: matching_spec.Encoded, gt: GroundTruth, r: Resampling
) -> tuple[spec.Sample, pa.DictionaryArray]:
    encoded = pc.dictionary_encode(query)
    # each distinct id hashed once: a query has many predictions
    keys_of = query_keys(encoded.dictionary.to_pylist(), r.seed)
    codes = _codes(encoded)
    score = e.score + 0.0
    sample = spec.Sample(
        keys=keys_of[codes] if len(codes) else np.zeros(0, dtype=np.uint64),
        unknown=e.unknown,
        score=score,
        label=e.label,
        ranks=matching_spec.true_pair_ranks(e.query, score, e.label),
        positive_keys=spec.positive_keys(gt, r.seed),
    )
    return sample, encoded
