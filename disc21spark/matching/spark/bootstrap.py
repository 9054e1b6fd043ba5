"""The bootstrap on Spark: the non-matches' counts per query, weighed, no pass over the rows.

The true pairs are few (at most the ground truth's positives per submission): they are
collected, and their levels (distinct scores) broadcast. The metrics' counting job has
already counted the non-matching rows per (submission, query, bucket of the grid of every
true score) and kept those counts (``plan.QueryBuckets``). Each partition of them is put
into each submission's levels (``searchsorted``), weighed by its query's resample
weights, drawn once on the driver for every query of the ground truth
and broadcast with the levels (``weighted.Drawn``; a table past ``TABLE_MAX_BYTES`` is not
drawn ahead, and a partition draws its rows' own from the seed and the query id,
``weights.py``), and counts per (submission, bucket, resample); those integer counts
travel as small blocks that the executors add up (``payload.py``), and the driver receives
each block once. A small input's counts, which the counting job collected, are weighed
on the driver in one batch by the same function. Integer counts add up alike in any
order, so the counts, and the figures the specification computes from them, are the
same bits whatever the partitioning. The true pairs and their ranks in their queries
are the metrics' own (``plan.RankedTruth``, from its counting pass): no Spark job of
their own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from disc21spark.core.phases import Phases
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.spark.labels import SUBMISSION
from disc21spark.matching.spark.plan import QueryBuckets, RankedTruth
from disc21spark.matching.stats import groups, payload, weighted
from disc21spark.matching.stats.groups_table import GroupTable
from disc21spark.matching.stats.model import Resampling, Uncertainty

BLOCKS_SCHEMA = "submission int, block int, counts binary"


def attach(
    kept: QueryBuckets | None,
    metrics: dict[int, MatchingMetrics],
    true_pairs: dict[int, RankedTruth],
    scoring: Any,
    phases: Phases,
) -> dict[int, MatchingMetrics]:
    """``metrics`` with each submission's Uncertainty (and group table, with groups).
    ``kept``: the scored submissions' non-matches counted per query by the metrics'
    counting job (``plan.counts_of``; query_index < 0 for an unknown query), None when
    there are neither resamples nor groups (``needs_query_counts``); ``true_pairs``:
    each one's, from the metrics (``plan.aggregate_phase``); ``scoring``:
    ``score.Scoring``, its ground truth, resampling and the weights it carries (drawn
    here when it carries none)."""
    drawn = weighted.drawn_for(scoring.gt, scoring)
    r = drawn.r
    with phases.phase("bootstrap") as note:
        true = {s: true_pairs[s] for s in metrics}
        found = measure(kept, true, scoring.gt, drawn)
        note["rows"] = sum(m.n_predictions for m in metrics.values())
        read = "the counts per query" if kept is not None else "the metrics' own counts"
        note["detail"] = f"{r.resamples:,} resamples of {read}, no pass over the rows"
    return {s: replace(m, uncertainty=found[s][0], groups=found[s][1]) for s, m in metrics.items()}


def measure(
    kept: QueryBuckets | None,
    true: dict[int, RankedTruth],
    gt: GroundTruth,
    drawn: weighted.Drawn,
) -> dict[int, tuple[Uncertainty, GroupTable | None]]:
    """The Uncertainty of each submission of ``true`` (its true pairs and their ranks),
    equal to ``stats.spec.bootstrap`` bit for bit, and its group table (None without
    groups), equal to ``groups_spec.group_table``; ``drawn``: the resampling and the
    weights of ``gt``'s queries (``weighted.Drawn``); ``kept``: as ``attach`` takes it."""
    # every query's keys and weights, drawn once, broadcast with the counting
    r, keys = drawn.r, drawn.keys
    subs = list(true)
    levels = {s: weighted.levels_of(true[s].score) for s in subs}
    codes = r.groups.codes if r.groups is not None else None
    by_code = (
        {}
        if codes is None
        else {
            s: groups.code_levels(true[s].score, codes[true[s].query], r.groups.none) for s in subs
        }
    )
    if kept is not None:  # score.py decided: resamples or groups (needs_query_counts)
        counts, code_counts = _miss_counts(kept, levels, by_code, drawn)
    else:  # no resample, no group: the plan's own counts hold the optimistic buckets
        counts = {s: (np.zeros((len(levels[s]), 0), np.int64), true[s].optimistic) for s in subs}
        code_counts = {}
    positives = drawn.positive_keys
    owners = None if codes is None else groups.positive_codes(gt, codes)
    out = {}
    for s in subs:
        t = len(levels[s])
        misses, optimistic = counts.get(
            s, (np.zeros((t, r.resamples), np.int64), np.zeros(t, np.int64))
        )
        pairs = (keys[true[s].query], true[s].score, true[s].rank)
        table = None
        if codes is not None:
            with_codes = (*pairs, codes[true[s].query])
            table = groups.table(
                r.groups, by_code[s], code_counts.get(s), with_codes, (positives, owners), drawn
            )
        out[s] = (
            weighted.uncertainty_of(levels[s], misses, optimistic, pairs, drawn),
            table,
        )
    return out


def needs_query_counts(r: Resampling | None) -> bool:
    """Whether the bootstrap weighs the non-matches per query: with resamples or groups
    (without either, the metrics' own counts hold the optimistic buckets it needs)."""
    return r is not None and bool(r.resamples or r.groups is not None)


def _miss_counts(
    kept: QueryBuckets,
    levels: dict,
    by_code: dict,
    drawn: weighted.Drawn,
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], dict[int, list[np.ndarray]]]:
    """Per submission with true pairs (or with groups): its non-matches' counts
    (``weighted.miss_counts``) and per group code (``groups.code_miss_counts``, when
    ``by_code`` holds its levels), weighed from ``kept`` (the counts per (submission,
    query, bucket) and their grid) in blocks (``payload.py``), and put together here."""
    wanted = {s: lv for s, lv in levels.items() if len(lv) or s in by_code}
    if not wanted:
        return {}, {}
    weigh = _weighed_on_driver if kept.on_driver else _weighed_on_executors
    return _assembled(weigh(kept, wanted, by_code, drawn), wanted, by_code, drawn.r)


def _weighed_on_driver(kept: QueryBuckets, wanted: dict, by_code: dict, drawn) -> dict:
    """A small input's counts, collected by the counting job, weighed here in one batch:
    two Python stages on the executors cost more than the transfer (docs/design.md,
    "The leaderboard statistics on every engine"). (submission, block) -> [packed
    counts]."""
    if kept.table is None:
        raise RuntimeError("internal error: the counts per query were not collected")
    batches = kept.table.to_batches()
    sent: dict[tuple[int, int], list[bytes]] = {}
    for s, number, data in _blocks(batches, kept.grid.splits, wanted, by_code, drawn):
        sent.setdefault((s, number), []).append(data)
    return sent


def _weighed_on_executors(kept: QueryBuckets, wanted: dict, by_code: dict, drawn) -> dict:
    """The counts weighed in each partition of ``kept``, each block added up on the
    executors: the driver receives it once. (submission, block) -> [packed counts]."""
    frame = kept.frame
    # the table of weights travels once per executor with the keys: no partition draws
    shared = frame.sparkSession.sparkContext.broadcast((wanted, by_code, drawn, kept.grid.splits))

    def count(batches):
        wanted, by_code, drawn, splits = shared.value
        found = _blocks(batches, splits, wanted, by_code, drawn)
        if found:
            yield _blocks_batch(found)

    try:
        # the counts per query reach Python, whatever the number of rows
        counted = frame.mapInArrow(count, BLOCKS_SCHEMA)
        # each block added up on the executors: the driver receives it once
        counted = counted.groupBy(SUBMISSION, "block").applyInArrow(_add_blocks, BLOCKS_SCHEMA)
        sent: dict[tuple[int, int], list[bytes]] = {}
        for s, number, data in counted.collect():
            sent.setdefault((s, number), []).append(data)
    finally:
        shared.unpersist()
    return sent


def _blocks(batches, splits: np.ndarray, wanted: dict, by_code: dict, drawn) -> list:
    """Arrow ``batches`` of counts per query (a partition's, or all of a small input's)
    weighed at once: (submission, block, packed counts) triples. At once: the weights of
    each query are drawn once, not once per batch holding one of its rows (a partition
    of 5M rows holds 100 MB here: 20 bytes a row)."""
    import pyarrow as pa

    listed = [batch for batch in batches if batch.num_rows]
    if not listed:
        return []
    whole = pa.Table.from_batches(listed).combine_chunks().to_batches()[0]
    return [
        (s, number, data)
        for s, parts in _batch_counts(whole, splits, wanted, by_code, drawn).items()
        for number, data in payload.blocks(parts)
    ]


def _assembled(sent: dict, wanted: dict, by_code: dict, r: Resampling) -> tuple[dict, dict]:
    """Each submission's counts from its blocks ((submission, block) -> packed bytes, one
    or more): ``_miss_counts``' two dictionaries."""
    found: dict[int, dict[int, np.ndarray]] = {}
    for (s, number), data in sent.items():
        found.setdefault(s, {})[number] = payload.total(data)
    out, coded = {}, {}
    for s, got in found.items():
        code_levels = [len(lv) for lv in by_code[s]] if s in by_code else None
        shapes = payload.count_shapes(len(wanted[s]), code_levels, r.resamples)
        misses_of, optimistic, *rest = payload.assemble(got, shapes)
        out[s] = (misses_of, optimistic)
        if rest:
            coded[s] = rest
    return out, coded


def _blocks_batch(found: list[tuple[int, int, bytes]]):
    """An Arrow batch of BLOCKS_SCHEMA from (submission, block, counts) triples."""
    import pyarrow as pa

    subs, numbers, data = zip(*found)
    return pa.RecordBatch.from_arrays(
        [pa.array(subs, pa.int32()), pa.array(numbers, pa.int32()), pa.array(data, pa.binary())],
        names=[SUBMISSION, "block", "counts"],
    )


def _add_blocks(table):
    """One (submission, block)'s packed counts from every partition (an Arrow table of
    BLOCKS_SCHEMA), added up: one row."""
    import pyarrow as pa

    s, number = table.column(0)[0].as_py(), table.column(1)[0].as_py()
    return pa.Table.from_batches(
        [_blocks_batch([(s, number, payload.add(table.column(2).to_pylist()))])]
    )


def _batch_counts(
    batch, splits: np.ndarray, wanted: dict, by_code: dict, drawn: weighted.Drawn
) -> dict[int, list]:
    """One Arrow batch of non-matches counted per (submission, query, bucket of the grid
    of ``splits``) (a partition's): per submission, [weighted, optimistic], then its
    ``groups.code_miss_counts`` when it has groups. A bucket's rows stand at its lower
    split: every level is a split, so each falls in the buckets of any set of the levels
    (a submission's, a group's) as its rows do."""
    sub = batch.column(0).to_numpy(zero_copy_only=False)
    query_index = batch.column(1).to_numpy(zero_copy_only=False)
    score = splits[batch.column(2).to_numpy(zero_copy_only=False)]
    many = batch.column(3).to_numpy(zero_copy_only=False)
    out = {}
    for s in np.unique(sub):
        levels = wanted.get(int(s))
        if levels is None:
            continue
        mine = sub == s
        qi = query_index[mine]
        fixed = qi < 0
        at = np.where(fixed, 0, qi)
        n = many[mine]
        reach = weighted.Reach.of(levels, score[mine])
        parts = list(weighted.miss_counts(reach, drawn.keys[at], fixed, drawn, n))
        if int(s) in by_code:
            parts += groups.code_miss_counts(by_code[int(s)], score[mine], qi, drawn, n)
        out[int(s)] = parts
    return out
