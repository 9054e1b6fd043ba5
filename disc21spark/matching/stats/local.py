"""The bootstrap in process: the in-process engine's (and so the per-file pool plan's)
intervals, from the Arrow columns and integer codes it already holds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from disc21spark.matching import spec as matching_spec
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.stats import spec
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.weights import query_keys


def measure(query: pa.Array, e: matching_spec.Encoded, gt: GroundTruth, r: Resampling) -> Uncertainty:
    """One submission's Uncertainty: ``query`` the Arrow query ids (n,), ``e`` the codes
    of the same rows (``matching/local.encode``)."""
    encoded = pc.dictionary_encode(query)
    # each distinct id hashed once: a query has many predictions
    keys_of = query_keys(encoded.dictionary.to_pylist(), r.seed)
    indices = encoded.indices  # int32, no nulls; read from its buffer (to_numpy probes pandas)
    codes = np.frombuffer(indices.buffers()[1], np.int32, len(indices), indices.offset * 4)
    score = e.score + 0.0
    sample = spec.Sample(
        keys=keys_of[codes] if len(codes) else np.zeros(0, dtype=np.uint64),
        unknown=e.unknown,
        score=score,
        label=e.label,
        ranks=matching_spec.true_pair_ranks(e.query, score, e.label),
        positive_keys=spec.positive_keys(gt, r.seed),
    )
    return spec.uncertainty(sample, r)
