"""The bootstrap on Spark: one counting pass over the labelled rows.

The true pairs are few (at most the ground truth's positives per submission): they are
collected, and their levels (distinct scores) broadcast. Each partition then puts its
non-matching rows into the levels' buckets (``searchsorted``), weighs them by their
query's resample weights, which it computes itself from the seed and the query id
(``weights.py``), and sends back per (submission, bucket, resample) integer counts; the
driver adds them up. Integer counts add up alike in any order, so the counts, and the
figures the specification computes from them, are the same bits whatever the
partitioning. The true pairs and their ranks in their queries are the metrics' own
(``plan.TruePairs``, from its counting pass): no Spark job of their own.
"""

from __future__ import annotations

import io
from dataclasses import replace

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.phases import Phases
from disc21spark.matching.labels import SUBMISSION
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.plan import TruePairs
from disc21spark.matching.stats import groups, spec
from disc21spark.matching.stats.groups_table import GroupTable
from disc21spark.matching.stats.model import Resampling, Uncertainty
from disc21spark.matching.stats.weights import query_keys

COUNTS_SCHEMA = "submission int, misses binary, optimistic binary, groups binary"


def attach(
    spark: SparkSession,
    rows: DataFrame,
    metrics: dict[int, MatchingMetrics],
    true_pairs: dict[int, TruePairs],
    gt: GroundTruth,
    r: Resampling,
    phases: Phases,
) -> dict[int, MatchingMetrics]:
    """``metrics`` with each submission's Uncertainty (and group table, with ``r.groups``).
    ``rows``: the scored submissions' compact labelled rows (``submission int, query_index
    long, label boolean, score double``: ``matching/labels.encoded``), query_index < 0 for
    an unknown query; ``true_pairs``: each one's, from the metrics (``plan.score_rows``)."""

    with phases.phase("bootstrap") as note:
        found = measure(spark, rows, {s: true_pairs[s] for s in metrics}, gt, r)
        note["rows"] = sum(m.n_predictions for m in metrics.values())
        note["detail"] = f"{r.resamples:,} resamples, one counting pass"
    return {s: replace(m, uncertainty=found[s][0], groups=found[s][1]) for s, m in metrics.items()}


def measure(
    spark: SparkSession,
    rows: DataFrame,
    true: dict[int, TruePairs],
    gt: GroundTruth,
    r: Resampling,
) -> dict[int, tuple[Uncertainty, GroupTable | None]]:
    """The Uncertainty of each submission of ``true`` (its true pairs and their ranks),
    equal to ``spec.uncertainty`` bit for bit, and its group table (None without
    ``r.groups``), equal to ``groups_spec.group_table``."""
    keys = query_keys(gt.query_ids, r.seed)
    subs = list(true)
    levels = {s: spec.levels_of(true[s].score) for s in subs}
    codes = r.groups.codes if r.groups is not None else None
    by_code = (
        {}
        if codes is None
        else {
            s: groups.code_levels(true[s].score, codes[true[s].query], r.groups.none) for s in subs
        }
    )
    counts, code_counts = _miss_counts(spark, rows, levels, by_code, keys, r)
    positives = spec.positive_keys(gt, r.seed)
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
                r.groups, by_code[s], code_counts.get(s), with_codes, (positives, owners), r
            )
        out[s] = (spec.uncertainty_of(levels[s], misses, optimistic, pairs, positives, r), table)
    return out


def _miss_counts(
    spark: SparkSession,
    rows: DataFrame,
    levels: dict,
    by_code: dict,
    keys: np.ndarray,
    r: Resampling,
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], dict[int, list[np.ndarray]]]:
    """Per submission with true pairs (or with groups): its non-matches' counts
    (``spec.miss_counts``) and per group code (``groups.code_miss_counts``, when
    ``by_code`` holds its levels), counted in each partition and added up here."""
    wanted = {s: lv for s, lv in levels.items() if len(lv) or s in by_code}
    if not wanted:
        return {}, {}
    shared = spark.sparkContext.broadcast((wanted, by_code, keys, r))

    def count(batches):
        import pyarrow as pa

        wanted, by_code, keys, r = shared.value
        # the partition's rows counted at once: the weights of each of its queries are
        # drawn once, not once per Arrow batch that holds one of its rows (a partition
        # of 5M rows holds 100 MB here: 20 bytes a row)
        listed = [batch for batch in batches if batch.num_rows]
        if not listed:
            return
        whole = pa.Table.from_batches(listed).combine_chunks().to_batches()[0]
        total = _batch_counts(whole, wanted, by_code, keys, r)
        for s, (misses, optimistic, *coded) in total.items():
            yield pa.RecordBatch.from_pydict(
                {
                    SUBMISSION: [s],
                    "misses": [pack_counts(misses)],
                    "optimistic": [optimistic.tobytes()],
                    "groups": [_pack(coded)],
                },
                schema=pa.schema(
                    [
                        (SUBMISSION, pa.int32()),
                        ("misses", pa.binary()),
                        ("optimistic", pa.binary()),
                        ("groups", pa.binary()),
                    ]
                ),
            )

    try:
        return _added(rows, count, wanted, r)
    finally:
        shared.unpersist()


def _added(rows: DataFrame, count, wanted: dict, r: Resampling) -> tuple[dict, dict]:
    """The partitions' counts added up per submission, in the order they arrive (integer
    sums: any order gives the same). One partition's counts at a time reach the driver
    (each holds levels × resamples integers), the next computed meanwhile: without the
    prefetch, each partition's job waited for the one before and the pass used one core."""
    misses = rows.where(~F.col("label")).select(SUBMISSION, "query_index", "score")
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    coded: dict[int, list[np.ndarray]] = {}
    for row in misses.mapInArrow(count, COUNTS_SCHEMA).toLocalIterator(prefetchPartitions=True):
        s, t = row[0], len(wanted[row[0]])
        m = unpack_counts(row[1], t, r.resamples)
        o = np.frombuffer(row[2], np.int64)
        old = out.get(s)
        # unpack_counts made m anew; o is a view of the row's bytes
        out[s] = (m, o.copy()) if old is None else (old[0] + m, old[1] + o)
        parts = _unpack(row[3])
        if parts:
            coded[s] = groups.add_counts(coded.get(s), parts)
    return out, coded


_NARROW = (np.int8, np.int16, np.int32, np.int64)


def pack_counts(counts: np.ndarray) -> bytes:
    """int64 (T, B) counts as bytes: each level's first count (int64 (T,)), then every
    count's difference from it in the narrowest integer type that holds them all (one
    byte gives its width). A level's resamples differ by hundreds, so this is about a
    quarter of the int64 matrix: the JVM copies each partition's payload several times
    (Arrow, rows, pickling). 30 MB payloads (3,765 levels × 1,000 resamples, two
    partitions at once with the prefetch) ran a 1 GB driver out of heap at 50M pairs,
    and still do at a quarter of the size (docs/benchmarks.md): adding them on the
    executors is what remains."""
    t, b = counts.shape
    base = counts[:, :1] if b else np.zeros((t, 1), np.int64)
    diff = counts - base
    lo, hi = (int(diff.min()), int(diff.max())) if diff.size else (0, 0)
    narrow = next(n for n in _NARROW if np.iinfo(n).min <= lo and hi <= np.iinfo(n).max)
    width = np.dtype(narrow).itemsize
    return bytes([width]) + base.astype(np.int64).tobytes() + diff.astype(narrow).tobytes()


def unpack_counts(data: bytes, levels: int, resamples: int) -> np.ndarray:
    """``pack_counts``'s bytes back as int64 (levels, resamples)."""
    base = np.frombuffer(data, np.int64, levels, offset=1)
    diff = np.frombuffer(data, np.dtype(f"i{data[0]}"), levels * resamples, 1 + 8 * levels)
    return diff.reshape(levels, resamples).astype(np.int64) + base[:, None]


def _pack(arrays: list[np.ndarray]) -> bytes:
    """A list of int64 arrays as bytes (numpy's .npz: no pickled objects, so nothing read
    back can run code)."""
    buffer = io.BytesIO()
    np.savez(buffer, *arrays)
    return buffer.getvalue()


def _unpack(data: bytes) -> list[np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as stored:
        return [stored[f"arr_{i}"] for i in range(len(stored.files))]


def _batch_counts(
    batch, wanted: dict, by_code: dict, keys: np.ndarray, r: Resampling
) -> dict[int, list]:
    """One Arrow batch of non-matching rows (all of a partition's): per submission,
    [weighted, optimistic], then its ``groups.code_miss_counts`` when it has groups."""
    sub = batch.column(0).to_numpy(zero_copy_only=False)
    query_index = batch.column(1).to_numpy(zero_copy_only=False)
    score = batch.column(2).to_numpy(zero_copy_only=False)
    out = {}
    for s in np.unique(sub):
        levels = wanted.get(int(s))
        if levels is None:
            continue
        mine = sub == s
        qi = query_index[mine]
        fixed = qi < 0
        at = np.where(fixed, 0, qi)
        parts = list(spec.miss_counts(levels, score[mine], keys[at], fixed, r))
        if int(s) in by_code:
            code = np.where(fixed, r.groups.none, r.groups.codes[at])
            parts += groups.code_miss_counts(by_code[int(s)], score[mine], keys[at], fixed, code, r)
        out[int(s)] = parts
    return out
