"""The in-process engine: one submission file scored in this process, no JVM.

A file is read in batches and counted chunk by chunk (``batched.py``: Arrow under the
Spark job's rules, the first bad line named in its words, the true pairs' positions
counted as the Spark plan's partitions count them); its figures are the
specification's (``spec.evaluate_encoded``), bit for bit, as tests hold every engine.
A table in memory (``api/tables.py``) is encoded whole here (``encode``) and counted
the same way (``positions.score_encoded``). Nothing here imports PySpark.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow.compute as pc

from disc21spark.matching import spec
from disc21spark.matching.arrays import numbers, strings
from disc21spark.matching.batched import score_source
from disc21spark.matching.codes import index_in
from disc21spark.matching.local_read import (
    Pairs,
    format_problem,
    unsupported,
)
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.source import NotForThisEngine, Source, local_path
from disc21spark.matching.stats import local as stats_local
from disc21spark.matching.stats.model import Resampling

# the reader's names, used through this module by the engine and the API
__all__ = [
    "NotForThisEngine",
    "Pairs",
    "Source",
    "format_problem",
    "local_path",
    "score_source",
    "unsupported",
]


def encode(pairs: Pairs, gt: GroundTruth) -> spec.Encoded:
    """Integer codes for the specification: the ids are dictionary-encoded, then joined
    with the ground truth on integers (a query's index, a positive reference's index)."""
    queries = pc.dictionary_encode(pairs.query)
    references = pc.dictionary_encode(pairs.reference)
    query = numbers(queries.indices).astype(np.int64)
    reference = numbers(references.indices).astype(np.int64)
    known = strings(gt.query_ids)
    # index in the ground truth of each distinct query id (-1: unknown), then per pair
    index_of_query = index_in(queries.dictionary, known)[query]
    positive_refs = np.unique(gt.positive_references.astype(str))
    index_of_reference = index_in(references.dictionary, strings(positive_refs))[reference]
    # the positive pairs as the same integer keys: (query index, positive reference index)
    positive_query = index_in(strings(gt.positive_queries), known)
    positive_reference = np.searchsorted(positive_refs, gt.positive_references.astype(str))
    positive_keys = positive_query * len(positive_refs) + positive_reference
    # only pairs of a known query and a positive reference can be true: look those few up
    matched = np.flatnonzero((index_of_query >= 0) & (index_of_reference >= 0))
    keys = index_of_query[matched] * len(positive_refs) + index_of_reference[matched]
    label = np.zeros(len(query), dtype=bool)
    label[matched] = np.isin(keys, positive_keys)
    return spec.Encoded(
        query=query,
        pair=query * max(len(references.dictionary), 1) + reference,
        label=label,
        score=pairs.score,
        unknown=index_of_query < 0,
        query_ids=queries.dictionary,
    )


def score_file(path: str, *args: Any, **kw: Any) -> MatchingMetrics:
    """``score_source`` of the local file ``path``; ``path`` as given names it in the
    --max-results message and the warnings, as on Spark."""
    return score_source(Source.local(path), *args, given=path, **kw)


def with_statistics(
    metrics: MatchingMetrics, encoded: spec.Encoded, gt: GroundTruth, r: Resampling
) -> MatchingMetrics:
    """``metrics`` with the intervals and tie sensitivity, and the group table when
    ``r.groups`` is given (stats/local.py)."""
    metrics = replace(metrics, uncertainty=stats_local.measure(encoded, gt, r))
    if r.groups is not None:
        metrics = replace(metrics, groups=stats_local.measure_groups(encoded, gt, r))
    return metrics


def first_repeat(codes: np.ndarray) -> int | None:
    """The earliest row whose code an earlier row holds, or None (every code distinct)."""
    if not spec.has_repeats(codes):  # the common case: an unstable sort tells there is none
        return None
    order = np.argsort(codes, kind="stable")
    same = codes[order][1:] == codes[order][:-1]
    return int(order[1:][same].min())
