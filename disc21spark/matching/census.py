"""The checking pass of the distributed plan: counts, bad rows and repeated pairs.

A repeated pair shares its query, so one shuffle of the compact rows' keys, hashed by
(submission, query), puts every copy of a pair, and every row of a query, in one
partition. There each partition sorts its keys in numpy (``partition_census``) and sends
the driver one row per submission: its rows, bad rows, rows of unknown queries, distinct
known queries, repeats and the smallest query holding a repeat. Every figure is a sum
(or a minimum) over disjoint sets of queries, so the driver's total is the same for any
partitioning. What moves: 21 bytes a row (submission, query, pair hash, a bad-row flag),
instead of three hash aggregations over as many groups as there are rows.

The first bad row itself (its file, line and reason) is looked up in the parsed input
only for a submission that has one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from disc21spark.matching.labels import SUBMISSION


@dataclass(frozen=True)
class Census:
    """One submission as the checking pass sees it."""

    n_predictions: int
    n_bad: int
    first_bad: object  # the ``bad`` struct of one bad row, or None
    n_unknown_query_predictions: int
    n_known_queries: int
    n_repeated_pairs: int
    repeating_query: int | None  # index of a query with a repeated pair hash


EMPTY_CENSUS = Census(0, 0, None, 0, 0, 0, None)

CENSUS_SCHEMA = (
    f"{SUBMISSION} int, n long, bad long, unknown long, known_queries long, "
    "repeats long, repeating long"
)
FIGURES = ("n", "bad", "unknown", "known_queries", "repeats")


def census(
    rows: DataFrame, pairs: DataFrame | None = None, partitions: int | None = None
) -> dict[int, Census]:
    """Counts and checks of every submission of compact rows (``labels.encoded``), from
    one shuffle of their keys into ``partitions`` (None: as Spark's adaptive execution
    sizes them). ``pairs``: the parsed predictions the rows come from, when they need
    checking: then the rows carry ``bad`` (a boolean) and the first bad row of a
    submission is looked up in ``pairs`` (its ``bad`` struct)."""
    flag = F.col("bad") if pairs is not None else F.lit(False)
    keys = rows.select(SUBMISSION, "query_index", "pair", flag.alias("is_bad"))
    if partitions:
        # beyond 64 tasks a core, more partitions only add tasks (a value larger than the
        # rows, say, would schedule that many empty ones)
        most = 64 * rows.sparkSession.sparkContext.defaultParallelism
        keys = keys.repartition(min(partitions, most), SUBMISSION, "query_index")
    elif rows.rdd.getNumPartitions() > 1:
        keys = keys.repartition(SUBMISSION, "query_index")
    # else one partition holds every row already: a shuffle would cost two Spark jobs
    totals: dict[int, dict] = {}
    for r in keys.mapInArrow(_census_batches, CENSUS_SCHEMA).collect():
        mine = totals.setdefault(r[SUBMISSION], {f: 0 for f in FIGURES} | {"repeating": None})
        for f in FIGURES:
            mine[f] += r[f]
        if r["repeating"] is not None:
            found = mine["repeating"]
            mine["repeating"] = r["repeating"] if found is None else min(found, r["repeating"])
    first_bad = _first_bad(pairs, [s for s, t in totals.items() if t["bad"]])
    return {
        sub: Census(
            n_predictions=t["n"],
            n_bad=t["bad"],
            first_bad=first_bad.get(sub),
            n_unknown_query_predictions=t["unknown"],
            n_known_queries=t["known_queries"],
            n_repeated_pairs=t["repeats"],
            repeating_query=t["repeating"],
        )
        for sub, t in totals.items()
    }


def _first_bad(pairs: DataFrame | None, subs: list[int]) -> dict[int, object]:
    """The earliest bad row (the ``bad`` struct's minimum: ``order`` first) of each of
    ``subs``: one more read of the input, only when a submission has one (the struct
    stays out of the compact rows, the cache and the Python workers)."""
    if not subs or pairs is None:
        return {}
    found = (
        pairs.where(F.col("bad").isNotNull() & F.col(SUBMISSION).isin(subs))
        .groupBy(SUBMISSION)
        .agg(F.min("bad").alias("first_bad"))
        .collect()
    )
    return {r[SUBMISSION]: r["first_bad"] for r in found}


def _census_batches(batches):
    """Runs on the executors: one partition's Arrow batches in, its census rows out."""
    import pyarrow as pa

    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    table = pa.concat_tables(tables).combine_chunks()
    columns = [table.column(c).to_numpy() for c in (SUBMISSION, "query_index", "pair")]
    flags = table.column("is_bad").to_numpy(zero_copy_only=False)
    for row in partition_census(*columns, flags):
        yield pa.RecordBatch.from_pylist([row], schema=_ARROW_SCHEMA())


def _ARROW_SCHEMA():  # noqa: N802 - built lazily: pyarrow is imported on the executors
    import pyarrow as pa

    return pa.schema(
        [(SUBMISSION, pa.int32())]
        + [(f, pa.int64()) for f in FIGURES]
        + [("repeating", pa.int64())]
    )


def partition_census(
    sub: np.ndarray, query: np.ndarray, pair: np.ndarray, bad: np.ndarray
) -> list[dict]:
    """The census rows of one partition whose rows hold every row of their (submission,
    query): int32 submissions, int64 query indexes (< 0: unknown) and pair hashes, bool
    bad-row flags. One dict per submission present, with ``SUBMISSION`` and ``FIGURES``
    as ints and ``repeating`` the smallest query index holding a repeat (None: none)."""
    if not len(sub):
        return []
    if sub.min() == sub.max():  # one submission (a single file): no sort to find them
        subs, code = sub[:1], np.zeros(len(sub), np.int64)
    else:
        subs, code = np.unique(sub, return_inverse=True)
    per_sub = lambda mask: np.bincount(code[mask], minlength=len(subs))  # noqa: E731
    known = query >= 0
    # distinct (submission, known query): one sort of one int64 key
    width = int(query[known].max()) + 1 if known.any() else 1
    queries = np.unique(code[known].astype(np.int64) * width + query[known]) // width
    repeats, repeating = _repeats(code, query, pair, len(subs))
    figures = zip(
        np.bincount(code, minlength=len(subs)),
        per_sub(bad),
        per_sub(~known),
        np.bincount(queries, minlength=len(subs)),
        repeats,
        repeating,
    )
    return [
        {SUBMISSION: int(s), **dict(zip(FIGURES, map(int, f[:5]))), "repeating": f[5]}
        for s, f in zip(subs, figures)
    ]


def _repeats(code: np.ndarray, query: np.ndarray, pair: np.ndarray, n_subs: int):
    """Per submission code: repeated rows (a pair's copies beyond its first) and the
    smallest query holding one (None: none). One sort of the pair hashes; only rows whose
    hash occurs twice are compared on (submission, query, hash)."""
    repeats, repeating = np.zeros(n_subs, np.int64), [None] * n_subs
    order = np.argsort(pair)
    equal = pair[order][1:] == pair[order][:-1]
    if not equal.any():
        return repeats, repeating
    twice = order[np.unique(np.r_[np.flatnonzero(equal), np.flatnonzero(equal) + 1])]
    c, q, p = code[twice], query[twice], pair[twice]
    rank = np.lexsort((p, q, c))
    c, q, p = c[rank], q[rank], p[rank]
    again = (c[1:] == c[:-1]) & (q[1:] == q[:-1]) & (p[1:] == p[:-1])
    np.add.at(repeats, c[1:][again], 1)
    for k in np.unique(c[1:][again]):
        repeating[k] = int(q[1:][again & (c[1:] == k)].min())
    return repeats, repeating
