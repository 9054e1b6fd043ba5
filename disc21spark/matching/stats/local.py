"""The bootstrap in process: the in-process engine's (and so the per-file pool plan's)
intervals and group table, from the Arrow columns and integer codes it already holds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from disc21spark.matching import spec as matching_spec
from disc21spark.matching.arrays import strings
from disc21spark.matching.codes import index_in
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.stats import groups, spec, weights
from disc21spark.matching.stats.groups_table import GroupTable
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.weights import query_keys


def measure(e: matching_spec.Encoded, gt: GroundTruth, r: Resampling) -> Uncertainty:
    """One submission's Uncertainty: ``e`` its rows' codes, with the distinct query ids
    (``matching/local.encode`` keeps them)."""
    sample, _, _ = _sample(e, gt, r)
    return spec.uncertainty(sample, r)


def measure_groups(e: matching_spec.Encoded, gt: GroundTruth, r: Resampling) -> GroupTable:
    """One submission's group table (``r.groups`` given), arguments as ``measure``'s."""
    sample, index, codes = _sample(e, gt, r)
    # each distinct query's code, then each row's: in no group when unknown
    code_of = np.where(index < 0, r.groups.none, r.groups.codes[np.maximum(index, 0)])
    code = code_of[codes] if len(codes) else np.zeros(0, np.int64)
    return groups.measure(sample, code, gt, r.groups, r)


def _sample(
    e: matching_spec.Encoded, gt: GroundTruth, r: Resampling
) -> tuple[spec.Sample, np.ndarray, np.ndarray]:
    """The bootstrap's sample, each distinct query's index in the ground truth (int64,
    -1 when unknown) and each row's index among the distinct queries (int64 (n,))."""
    distinct, codes = e.query_ids, e.query
    index = index_in(distinct, strings(gt.query_ids))
    # the ground truth's keys and weights, computed once in this process for every
    # submission scored against it; an unknown query's key hashed here
    known = spec.ground_truth_keys(gt, r.seed)
    weights.remember(known, r.resamples)
    keys_of = known[np.maximum(index, 0)] if len(known) else np.zeros(len(index), np.uint64)
    unknown = np.flatnonzero(index < 0)
    if len(unknown):
        keys_of[unknown] = query_keys(distinct.take(pa.array(unknown)).to_pylist(), r.seed)
    score = e.score + 0.0
    sample = spec.Sample(
        keys=keys_of[codes] if len(codes) else np.zeros(0, dtype=np.uint64),
        unknown=e.unknown,
        score=score,
        label=e.label,
        ranks=matching_spec.true_pair_ranks(e.query, score, e.label),
        positive_keys=spec.positive_keys(gt, r.seed),
    )
    return sample, index, codes
