"""μAP by query group (``--query-groups``): the figures of each group, with intervals.

Definition. Group g's figures are the official scorer's figures of the submission
restricted to the pairs whose query is in g or in no group (queries unknown to the ground
truth are in no group), against the ground truth restricted to the same queries: its
positives are those of g's queries and of the queries in no group. So the distractors
and the queries no group claims penalise every group alike. Its intervals are the
bootstrap's (``spec.py``) of that restricted submission, with the same weights: every
group, engine and submission meets the same resamples. A group whose restricted ground
truth has no positive has no figure (None).

The engines count once. Every row has a code: its query's group, or ``none`` (= the
number of groups). A group's levels are the distinct scores of its true pairs and of the
ungrouped ones; the non-matching rows of a group are counted at its own levels, those of
no group once at the levels of every true pair, and then folded (integer sums of
neighbouring buckets) into each group's levels: a bucket of the finer levels lies whole
inside one bucket of the coarser. Counts are integers and add up over any split of the
rows, so every engine that sums them gets the same bits (``groups_spec.py`` holds the
definition by restriction, and the tests hold the two equal).
"""

from __future__ import annotations

import numpy as np

from disc21spark.matching import kernel
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.stats import weighted
from disc21spark.matching.stats.groups_file import QueryGroups
from disc21spark.matching.stats.groups_table import GroupResult, GroupTable


def code_levels(true_scores: np.ndarray, true_codes: np.ndarray, none: int) -> list[np.ndarray]:
    """float64 (T_c,) per code 0 … none: a group's levels (its true pairs' and the
    ungrouped ones' distinct scores, decreasing); for ``none``, every true pair's."""
    ungrouped = true_codes == none
    out = [weighted.levels_of(true_scores[(true_codes == g) | ungrouped]) for g in range(none)]
    return [*out, weighted.levels_of(true_scores)]


def code_miss_counts(
    levels: list[np.ndarray],
    score: np.ndarray,
    query: np.ndarray,
    drawn: weighted.Drawn,
    count: np.ndarray | None = None,
) -> list[np.ndarray]:
    """What non-matching rows (scores float64 (n,), ``query`` int (n,): the ground-truth
    index of each row's query, < 0 for a query unknown to it, whose rows weigh 1 in every
    resample and are in no group; ``drawn``: the resampling, with each ground-truth
    query's key (``weighted.Drawn``); ``count`` int (n,): how many rows each stands for, None: one)
    contribute, additive over any split of the rows: [rows per code int64 (G+1,), then
    per code c its weighted counts int64 (T_c, B) and plain counts int64 (T_c,) per
    pessimistic bucket of levels[c]], the codes those of ``drawn.r.groups``."""
    query = np.asarray(query)
    fixed = query < 0
    at = np.maximum(query, 0)
    r = drawn.r
    keys = drawn.keys[at] if len(at) else np.zeros(0, np.uint64)
    code = np.where(fixed, r.groups.none, r.groups.codes[at]).astype(np.int64)
    many = None if count is None else np.asarray(count, np.float64)
    out = [np.rint(np.bincount(code, weights=many, minlength=len(levels))).astype(np.int64)]
    for c, lv in enumerate(levels):
        mine = code == c
        bucket = weighted.buckets(lv, score[mine])
        part = None if many is None else many[mine]
        out.append(weighted.weighted_counts(bucket, keys[mine], fixed[mine], len(lv), drawn, part))
        plain = np.bincount(bucket, weights=part, minlength=len(lv) + 1)[: len(lv)]
        out.append(np.rint(plain).astype(np.int64))
    return out


def fold(counts: np.ndarray, fine: np.ndarray, coarse: np.ndarray) -> np.ndarray:
    """Counts per bucket of the ``fine`` levels (int64 (T, …)) per bucket of ``coarse``,
    a subset of them (int64 (T_c, …)): sums of runs of neighbouring buckets."""
    # fine bucket i (scores from fine[i] to fine[i-1]) lies in coarse bucket j(i)
    j = weighted.buckets(coarse, fine)
    total = np.concatenate([np.zeros((1, *counts.shape[1:]), np.int64), np.cumsum(counts, axis=0)])
    edges = np.searchsorted(j, np.arange(len(coarse) + 1), "left")
    return total[edges[1:]] - total[edges[:-1]]


def positive_codes(gt: GroundTruth, codes: np.ndarray) -> np.ndarray:
    """int (P,): the code of each positive pair's query (``codes`` per ground-truth query)."""
    index = {str(q): i for i, q in enumerate(gt.query_ids)}
    at = np.fromiter((index[str(q)] for q in gt.positive_queries), np.int64, gt.n_positives)
    return codes[at]


def table(
    groups: QueryGroups,
    levels: list[np.ndarray],
    counts: list[np.ndarray] | None,
    true_pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    positives: tuple[np.ndarray, np.ndarray],
    drawn: weighted.Drawn,
) -> GroupTable:
    """Every group's figures (``groups``: groups_file.QueryGroups) from the summed
    ``code_miss_counts`` (None: no non-matching row), the true pairs (keys uint64, scores
    float64, ranks int64, codes int; any order) and the positives (keys uint64 (P,),
    codes int (P,)); ``drawn``: the resampling and its weights (``weighted.Drawn``)."""
    r, none = drawn.r, groups.none
    counts = counts or code_miss_counts(levels, np.zeros(0), np.zeros(0, np.int64), drawn)
    rows = counts[0]
    shared_w, shared_p = counts[1 + 2 * none], counts[2 + 2 * none]
    keys, scores, ranks, codes = true_pairs
    out = []
    for g, name in enumerate(groups.names):
        lv = levels[g]
        mine = (codes == g) | (codes == none)
        drawn_misses = counts[1 + 2 * g] + fold(shared_w, levels[none], lv)
        plain = counts[2 + 2 * g] + fold(shared_p, levels[none], lv)
        owned = (positives[1] == g) | (positives[1] == none)
        pairs = (keys[mine], scores[mine], ranks[mine])
        figures = point(
            np.bincount(weighted.buckets(lv, pairs[1]), minlength=len(lv)),
            plain,
            pairs[2],
            int(owned.sum()),
        )
        replicates = {}
        if r.resamples and owned.any():
            hits, found, weighed = weighted.true_counts(lv, pairs, positives[0][owned], drawn)
            replicates = weighted.replicates(
                weighted.WeightedCounts(drawn_misses, hits, found, weighed)
            )
        sizes = (int(groups.sizes[g]), int(owned.sum()), int(rows[g] + rows[none] + mine.sum()))
        out.append(GroupResult.of(name, sizes, figures, replicates, r))
    return GroupTable(groups.source, int(len(groups.codes) - groups.sizes.sum()), tuple(out), r)


def point(hits: np.ndarray, misses: np.ndarray, ranks: np.ndarray, n_positives: int) -> dict:
    """The official figures (model.STATISTICS) from one order's per-level counts (int
    (T,) each: true pairs of the level, non-matches in its pessimistic bucket), the true
    pairs' ranks and the positives: the scorer's divisions, so the same bits."""
    if n_positives == 0:
        return dict.fromkeys(("micro_ap", "recall_at_p90", "recall_at_rank1", "recall_at_rank10"))
    k, n = kernel.level_ends(hits, misses)
    (best,) = kernel.p90_levels(k, n)
    out = {
        "micro_ap": kernel.micro_ap(hits, k, n, n_positives),
        "recall_at_p90": float(k[best] / n_positives) if best >= 0 else None,
    }
    for name, rank in kernel.RANKS.items():
        out[name] = float(np.count_nonzero(ranks < rank) / n_positives)
    return out
