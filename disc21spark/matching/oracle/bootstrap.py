"""Bootstrap intervals and tie sensitivity of the matching-track metrics: the specification.

The unit of resampling is the query with all its predictions and positives (μAP is not
a mean of per-query values). Resample ``b`` gives query ``q`` the weight w_b(q)
(``weights.py``: Poisson(1), a function of the seed, the query id and b); a query drawn
w times stands in the resampled benchmark as w copies under fresh ids, and each figure is
what the official scorer gives for that resampled submission. Predictions for queries
that the ground truth does not know keep the weight 1 in every resample: the bootstrap
draws from the benchmark's queries, and those predictions are no draw from it but a
fixed part of the submission (its false positives stay in every replicate, as they are
in the official figure; resampling them would let made-up ids change the interval).

Every resample shares the submission's one sort. Let the levels be the distinct scores
of the predicted true pairs, in decreasing order. In the pessimistic order all the
non-matching pairs scoring at least a level come before that level's true pairs, which
follow one another (their order inside the level changes no figure: each one adds 1 to
both the true positives and the position). So per level and resample only two weighted
counts are needed, the non-matches in the level's bucket (scores from that level down to
the next) and the true pairs of the level; the positions follow by cumulative sums:
K = Σ true-pair weights up to the level, N = Σ non-match weights up to it + K. The level's
true positives are at (K − j, N − j), j = 0 … m − 1 (m its weighted true pairs), and

* μAP_b = Σ over them of (k/P_b − (k−1)/P_b) · k/n, the official scorer's terms, with
  P_b the weighted positives of the ground truth;
* recall at P90_b = the largest K/P_b over levels with K/N ≥ 0.9 (a level's last true
  positive dominates the others), 0 where precision 0.9 is never reached;
* recall@k_b = the weighted true pairs of rank < k over P_b (ranks as in ``matching/oracle/spec.py``).

A resample in which no positive is drawn (P_b = 0) has no figure: NaN, left out of the
quantiles. Counts are integers, so every engine that adds the same weights in another
order gets the same counts, and the figures come from the counts by this module alone:
the intervals are the same bits on every engine, partitioning and file order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from disc21spark.matching.model import GroundTruth
from disc21spark.matching.oracle import spec as matching_spec
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.weighted import (
    Drawn,
    Reach,
    levels_of,
    miss_counts,
    positive_keys,
    uncertainty_of,
)
from disc21spark.matching.stats.weights import query_keys


@dataclass(frozen=True)
class Sample:
    """One submission as the bootstrap sees it (numpy arrays, one row per prediction)."""

    keys: np.ndarray  # uint64 (n,): query keys (weights.query_keys)
    unknown: np.ndarray  # bool (n,): the query is not in the ground truth (weight 1)
    score: np.ndarray  # float64 (n,)
    label: np.ndarray  # bool (n,)
    ranks: np.ndarray  # int64: rank of each true pair, in the order of the rows
    positive_keys: np.ndarray  # uint64 (P,): the query key of every ground-truth positive


def uncertainty(s: Sample, r: Resampling) -> Uncertainty:
    """The intervals (when ``r.resamples`` > 0) and the optimistic μAP of one submission."""
    levels = levels_of(s.score[s.label])
    miss = ~s.label
    reach = Reach.of(levels, s.score[miss])
    # every weight drawn where it is weighed, from its key (no table): the rows carry
    # their own keys, so no ground truth's keys are needed
    drawn = Drawn(r, np.zeros(0, np.uint64), s.positive_keys)
    misses, optimistic = miss_counts(reach, s.keys[miss], s.unknown[miss], drawn)
    true_pairs = (s.keys[s.label], s.score[s.label], s.ranks)
    return uncertainty_of(levels, misses, optimistic, true_pairs, drawn)


def bootstrap(
    query_ids: np.ndarray,
    reference_ids: np.ndarray,
    scores: np.ndarray,
    gt: GroundTruth,
    r: Resampling,
) -> Uncertainty:
    """One submission's Uncertainty from its columns, in memory: the specification the
    engines are held equal to."""
    e = matching_spec.encode(query_ids, reference_ids, scores, gt)
    score = e.score + 0.0
    sample = Sample(
        keys=query_keys(np.asarray(query_ids, dtype=object), r.seed),
        unknown=e.unknown,
        score=score,
        label=e.label,
        ranks=matching_spec.true_pair_ranks(e.query, score, e.label),
        positive_keys=positive_keys(gt, r.seed),
    )
    return uncertainty(sample, r)
