"""One submission scored as submitted and on each board of a split, from one read.

A pool with ``--private-queries`` judges each file on the full ground truth, then scores
it on each board: its rows of the board's queries, on the board's ground truth
(``pool/boards.py``). Parsing, checking and labelling a file is most of its cost, so the
rows labelled for the file as submitted (``batched.scored``'s ``kept``) are cut here by
each board's queries instead: a row's query is coded by its index in the full ground
truth, and a board's ground truth keeps each of its queries' positive pairs, so the
row's label is the same on the board. Each board's rows then go through the same figures
(``batched.figures``) as the file of those rows alone would, so the figures are the same
bits. Nothing here imports PySpark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np
import pyarrow as pa

from disc21spark.core.memory import BATCH_BYTES
from disc21spark.core.phases import Phases
from disc21spark.matching import per_query
from disc21spark.matching.inprocess import batched
from disc21spark.matching.inprocess.arrays import compute, strings
from disc21spark.matching.inprocess.codes import index_in
from disc21spark.matching.inprocess.local_read import Pairs
from disc21spark.matching.inprocess.source import Source
from disc21spark.matching.model import GroundTruth, MatchingMetrics, Settings

# a board: its ground truth (the full one's queries of the board, their positive pairs)
# and the settings it is scored with
Board = tuple[GroundTruth, Settings]


def as_submitted(
    source: Source, gt: GroundTruth, settings: Settings
) -> tuple[MatchingMetrics, Callable[[Board], MatchingMetrics]]:
    """The file's metrics as submitted (``batched.score_source``'s with no intervals, no
    warning printed; raises as it raises), and what gives its metrics on a board: those
    of its rows of the board's queries alone, scored on the board's ground truth, cut
    from the rows labelled here. Of the file as submitted a pool keeps its validity and
    warnings alone, the boards' figures replacing its own (``pool/boards.py``): its
    intervals, a bootstrap as long as both boards' together, are not drawn."""
    kept: list = []
    judged = replace(settings, resampling=None)
    submitted = batched.scored(source, gt, judged, Phases(), source.where, kept)
    known = strings(gt.query_ids)
    return submitted, lambda board: _on_board(source, kept, known, board)


def _on_board(source: Source, kept: list, known: pa.Array, board: Board) -> MatchingMetrics:
    """The metrics of the ``kept`` rows (coded on the ids ``known``) on one board."""
    b_gt, b_settings = board
    # each full-ground-truth index's index on the board; the last entry (index -1, an
    # unknown query) and every query off the board: -1
    remap = np.full(len(known) + 1, -1, np.int64)
    remap[:-1] = index_in(known, strings(b_gt.query_ids))
    codes = [remap[query] for (query, _, _), _ in kept]  # each batch's rows' board index
    ons = [np.flatnonzero(code >= 0) for code in codes]  # each batch's rows on the board
    rows = per_query.QueryRows.empty(b_gt.n_queries) if b_settings.per_query else None
    counts = np.zeros(b_gt.n_queries, np.int64)
    true_query, true_score = [], []
    for ((_, label, score), reference), code, on in zip(kept, codes, ons):
        counts += np.bincount(code[on], minlength=b_gt.n_queries)
        true = on[label[on]]
        true_query.append(code[true])
        true_score.append(score[true])
        if rows is not None:  # a row off the board, of no query of it, is not counted
            rows.add_batch(code, label, score, reference)

    def chunks() -> Iterator[dict]:
        for ((_, label, score), _), code, on in zip(kept, codes, ons):
            yield {"query": code[on], "label": label[on], "score": score[on]}

    def ids():  # as the board's rows alone give them (asked for rarely)
        alone = Source.of_table(source.where, _rows_alone(b_gt, kept, codes, ons), [])
        return (strings(b_gt.query_ids), counts), batched.reference_counts(alone, BATCH_BYTES)

    true_pairs = (_joined(true_query, np.int64), _joined(true_score, np.float64))
    distinct = int(np.count_nonzero(counts))
    read = batched.Read(int(counts.sum()), chunks, true_pairs, 0, distinct, ids, rows)
    return batched.figures(read, b_gt, b_settings, Phases())


def _rows_alone(gt: GroundTruth, kept: list, codes: list, ons: list) -> Pairs:
    """The board's rows (``gt`` its ground truth) as one table, in file order."""
    ids = strings(gt.query_ids)
    query, reference, score = [], [], []
    for ((_, _, s), ref), code, on in zip(kept, codes, ons):
        query.append(compute("take", ids, pa.array(code[on])))
        reference.append(compute("take", ref, pa.array(on)))
        score.append(s[on])
    if not score:
        return Pairs(ids.slice(0, 0), ids.slice(0, 0), np.zeros(0))
    return Pairs(pa.concat_arrays(query), pa.concat_arrays(reference), np.concatenate(score))


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype)
