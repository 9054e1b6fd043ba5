"""A submission held in memory (a pandas DataFrame, a pyarrow Table) scored in this
process: the in-process engine's functions (``matching/inprocess/local.py``: integer codes, the
numpy specification, the coverage warnings) on a table instead of a file.

The table is read as a Parquet table is (typed columns, ids not stripped) and a bad one
gets the Parquet reader's reason, naming the row by its pandas index label (or, for a
pyarrow Table, its position) instead of by its ids.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from disc21spark.api.inputs import arrow_table
from disc21spark.core.errors import InputError
from disc21spark.matching.inprocess.batched import score_source
from disc21spark.matching.inprocess.local_read import Pairs
from disc21spark.matching.inprocess.source import Source
from disc21spark.matching.model import GroundTruth, MatchingMetrics, Settings
from disc21spark.matching.rows import PREDICTION_COLUMNS, first_bad_row
from disc21spark.matching.stats.model import Resampling


def table_pairs(value: Any, source: str) -> tuple[Pairs, list]:
    """The checked pairs of a table and each row's label; InputError naming the first
    bad row (a missing column, an empty id, a score that is null or not finite)."""
    table, index = arrow_table(value, source, PREDICTION_COLUMNS)
    query, reference, score = (table.column(c).combine_chunks() for c in PREDICTION_COLUMNS)
    if not (pa.types.is_floating(score.type) or pa.types.is_integer(score.type)):
        if not pa.types.is_null(score.type):
            raise InputError(source, f"column 'score' holds {score.type}, not numbers")
    score = score.cast(pa.float64())
    values = score.to_numpy(zero_copy_only=False)
    bad = first_bad_row(query, reference, score, values)
    if bad is not None:
        row, reason = bad
        raise InputError(source, reason, f"row {index[row]}")
    # + 0.0: -0.0 and 0.0 tie in the official sort, as the file readers make them
    return Pairs(query, reference, values + 0.0), index


def score_table(
    value: Any,
    source: str,
    gt: GroundTruth,
    limits: tuple[int, int],
    resampling: Resampling | None = None,
    per_query: bool = False,
    drawn: Any = None,
) -> MatchingMetrics:
    """One submission in memory scored as ``local.score_file`` scores a file, by the same
    passes (``batched.score_source``): the same checks in the same order (bad row,
    --max-results, a repeated pair, named by the rows' labels), the same counts, the
    same warnings (returned, not printed); with ``resampling``, the intervals (and its
    query groups' table) too; ``limits``: (max_results, curve_points); ``per_query``: the
    per-query table (``metrics.queries``); ``drawn``: the resample weights of ``gt``
    drawn once for a pool's tables (``stats.weighted.Drawn``; None: drawn here)."""
    pairs, index = table_pairs(value, source)
    table = Source.of_table(source, pairs, index)
    settings = Settings(*limits, resampling, per_query, drawn=drawn)
    return score_source(table, gt, settings, announce=False)
