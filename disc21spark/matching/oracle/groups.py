"""μAP by query group, the specification: each group's figures by their definition, the
official figures (``matching/spec.evaluate``) and the bootstrap (``spec.bootstrap``) of
the submission and the ground truth restricted to the group's queries and those of no
group. The engines' one counting pass (``groups.py``) is held equal to it bit for bit."""

from __future__ import annotations

import numpy as np

from disc21spark.matching.model import GroundTruth
from disc21spark.matching.oracle import bootstrap as spec
from disc21spark.matching.oracle import spec as matching_spec
from disc21spark.matching.stats.groups_file import QueryGroups
from disc21spark.matching.stats.groups_table import GroupResult, GroupTable
from disc21spark.matching.stats.model import STATISTICS, Resampling


def restrict(gt: GroundTruth, keep: np.ndarray) -> GroundTruth:
    """``gt`` with only the queries where ``keep`` (bool (n_queries,)) holds."""
    kept = set(np.asarray(gt.query_ids, dtype=object)[keep].tolist())
    positive = np.array([q in kept for q in gt.positive_queries], dtype=bool)
    return GroundTruth(
        gt.source,
        np.asarray(gt.query_ids)[keep],
        np.asarray(gt.positive_queries)[positive],
        np.asarray(gt.positive_references)[positive],
    )


def group_table(
    query_ids: np.ndarray,
    reference_ids: np.ndarray,
    scores: np.ndarray,
    gt: GroundTruth,
    groups: QueryGroups,
    r: Resampling,
) -> GroupTable:
    """Every group's figures (``groups``: groups_file.QueryGroups resolved against ``gt``)
    of one submission given by its columns (n,), by restriction."""
    query_ids = np.asarray(query_ids, dtype=object)
    code_of = dict(zip(map(str, gt.query_ids), groups.codes.tolist()))
    code = np.array([code_of.get(str(q), groups.none) for q in query_ids], dtype=np.int64)
    out = []
    for g, name in enumerate(groups.names):
        sub = restrict(gt, (groups.codes == g) | (groups.codes == groups.none))
        rows = (code == g) | (code == groups.none)
        columns = (
            query_ids[rows],
            np.asarray(reference_ids, dtype=object)[rows],
            np.asarray(scores, dtype=np.float64)[rows],
        )
        figures: dict = dict.fromkeys(STATISTICS)
        replicates: dict = {}
        if sub.n_positives:
            m = matching_spec.evaluate(*columns, sub)
            figures = {k: getattr(m, k) for k in STATISTICS}
            replicates = spec.bootstrap(*columns, sub, r).replicates
        sizes = (int(groups.sizes[g]), sub.n_positives, int(rows.sum()))
        out.append(GroupResult.of(name, sizes, figures, replicates, r))
    return GroupTable(groups.source, int(len(groups.codes) - groups.sizes.sum()), tuple(out), r)
