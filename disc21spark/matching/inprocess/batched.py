"""The in-process engine's passes over one file: read in batches, counted in two passes.

No file is read whole, so a file past memory is scored like any other. The first pass
reads it a batch at a time (``local_read.iter_pairs``: the same first bad line named
whichever batch finds it), labels each batch against the ground truth
(``codes.BatchEncoder``) and keeps per row only what counting needs, 21 bytes (its
query's index, its label, its score, its pair's key), in a temporary spill file; in
memory it keeps the true pairs (at most the ground truth's positives) and the rows of
each query. Between the passes the pairs' keys, 8 bytes a row and the one thing in
memory that grows with the rows, are sorted in place to find a repeated pair (a
repeated key is checked on the ids, read again). The second pass reads the spill file back a
chunk at a time and counts each chunk against the true scores, as every partition of
the Spark plan counts its rows: one search places each non-match among the true scores
(``stats.weighted.Reach``), which the figures' counts (``positions.count_rows``) and the
intervals' (``stats.weighted.miss_counts``) share; ``groups.code_miss_counts`` counts
the groups'. Integer counts added
up are the whole file's counts, so the figures and intervals are the same bits for any
batch size (``tests/test_batched.py`` holds them equal to the specification).
Nothing here imports PySpark.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from disc21spark.core import memory, progress
from disc21spark.core.errors import InputError
from disc21spark.core.memory import BATCH_BYTES
from disc21spark.core.phases import Phases
from disc21spark.matching import coverage, kernel, per_query, positions
from disc21spark.matching.inprocess.arrays import strings
from disc21spark.matching.inprocess.codes import BatchEncoder
from disc21spark.matching.inprocess.line_scan import lines_holding
from disc21spark.matching.inprocess.local_read import iter_pairs
from disc21spark.matching.inprocess.source import Source
from disc21spark.matching.model import GroundTruth, MatchingMetrics, Settings
from disc21spark.matching.rows import duplicate_reason, max_results_error
from disc21spark.matching.stats import weighted
from disc21spark.matching.stats.model import Resampling

# a spilled row: query index int32, label bool, score float64, pair key uint64
COLUMNS = (("query", np.int32), ("label", np.bool_), ("score", np.float64), ("key", np.uint64))


@dataclass
class Spill:
    """The rows of pass 1, as COLUMNS, in an unnamed temporary file (gone when closed,
    whatever ends the process); ``sizes``: the rows of each chunk, in file order."""

    file: object = field(default_factory=lambda: tempfile.TemporaryFile(prefix="disc21spark-"))
    sizes: list[int] = field(default_factory=list)

    def write(self, query, label, score, key) -> None:
        for values, (_, dtype) in zip((query, label, score, key), COLUMNS):
            np.ascontiguousarray(values, dtype=dtype).tofile(self.file)
        self.sizes.append(len(score))

    def chunks(self, wanted: tuple[str, ...] = ("query", "label", "score")) -> Iterator[dict]:
        """Each chunk's ``wanted`` columns (numpy arrays), in file order."""
        self.file.seek(0)
        for n in self.sizes:
            chunk = {}
            for name, dtype in COLUMNS:
                size = n * np.dtype(dtype).itemsize
                if name in wanted:
                    chunk[name] = np.fromfile(self.file, dtype=dtype, count=n)
                else:
                    self.file.seek(size, 1)
            yield chunk

    @property
    def rows(self) -> int:
        return sum(self.sizes)

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()


def score_source(
    source: Source,
    gt: GroundTruth,
    settings: Settings,
    phases: Phases | None = None,
    announce: bool = True,
    given: str | None = None,
) -> MatchingMetrics:
    """One submission's metrics, in this process; the Spark job's checks and errors
    (InputError naming ``source.where``, NotForThisEngine). ``settings``: how it is
    scored (``model.Settings``: with ``resampling`` the intervals and tie sensitivity,
    with ``per_query`` the per-query table, the file read ``batch_bytes`` at a time);
    ``announce``: print the coverage warnings here (a pool's task leaves it to the
    driver); ``given``: the name the user gave (default ``source.where``)."""
    given = given or source.where
    metrics = scored(source, gt, settings, phases or Phases(), given)
    if announce:
        coverage.announce(given, metrics.warnings)
    return metrics


@dataclass
class Read:
    """What pass 1 leaves for the figures: the ``rows`` read, ``chunks()`` of them
    (``Spill.chunks``' dicts), the true pairs (int64 query indices, float64 scores, in
    file order), the rows and distinct queries unknown or known, ``ids()`` for the
    coverage checks (``coverage.check_counted``) and the per-query rows (None: none)."""

    rows: int
    chunks: Callable[[], Iterator[dict]]
    true_pairs: tuple[np.ndarray, np.ndarray]
    unknown_rows: int
    distinct_queries: int
    ids: Callable[[], tuple]
    queries: per_query.QueryRows | None


def scored(
    source: Source,
    gt: GroundTruth,
    settings: Settings,
    phases: Phases,
    given: str,
    kept: list | None = None,
) -> MatchingMetrics:
    """``score_source``'s work (no warning printed). ``kept``: each checked batch's
    labelled rows appended, as ((int64 query index, -1: unknown; bool label; float64
    score), the rows' reference ids), for a pool's boards (``board_rows.py``)."""
    batch_bytes = settings.batch_bytes or BATCH_BYTES
    encoder = BatchEncoder(gt)
    rows = per_query.QueryRows.empty(gt.n_queries) if settings.per_query else None
    with Spill() as spill:
        with phases.phase("read") as note, progress.counter("read", "rows") as read:
            for pairs in iter_pairs(source, batch_bytes):
                encoded = encoder.encode(pairs)
                spill.write(*encoded)
                if rows is not None:
                    rows.add_batch(*encoded[:3], pairs.reference)
                if kept is not None:
                    kept.append((encoded[:3], pairs.reference))
                read.add(len(pairs.score))
            note["rows"] = spill.rows
            batches = len(spill.sizes)
            note["detail"] = "Arrow, in process" + (f", {batches:,} batches" if batches > 1 else "")
        with phases.phase("validate") as note:
            error = max_results_error(given, spill.rows, settings.max_results)
            if error is not None:
                raise error
            _check_repeats(source, batch_bytes, spill, encoder)
            note["rows"] = spill.rows

        def ids():  # the ids looked at again only for a submission that needs it
            return encoder.query_counts(), reference_counts(source, batch_bytes)

        found = Read(
            spill.rows,
            spill.chunks,
            encoder.true_pairs(),
            encoder.unknown_rows,
            encoder.distinct_queries(),
            ids,
            rows,
        )
        return figures(found, gt, settings, phases)


def figures(read: Read, gt: GroundTruth, settings: Settings, phases: Phases) -> MatchingMetrics:
    """The metrics of the rows ``read`` on ``gt`` (``settings``: with ``resampling`` the
    intervals, with ``per_query`` the per-query table): pass 2's counts, summed."""
    resampling = settings.resampling
    drawn = weighted.drawn_for(gt, settings)
    with phases.phase("score") as note:
        truth, counted = _count(read, drawn)
        stats = positions.QueryStats(read.rows, read.unknown_rows, read.distinct_queries)
        metrics = positions.metrics_from_parts(
            gt, truth, counted.counts, stats, settings.curve_points
        )
        metrics = coverage.check_counted(read.ids, gt, metrics, None)
        if read.queries is not None:
            metrics = _with_queries(metrics, truth, counted.counts, read.queries, gt, resampling)
        note["rows"] = metrics.n_predictions
        note["detail"] = f"{metrics.n_true_positives:,} true positives"
    if resampling is not None:
        with phases.phase("bootstrap") as note:
            metrics = _with_statistics(metrics, truth, counted, gt, drawn)
            note["rows"] = metrics.n_predictions
            note["detail"] = f"{resampling.resamples:,} resamples"
    return metrics


def _with_queries(
    metrics: MatchingMetrics,
    truth: positions.TrueScores,
    counts: positions.Counts,
    rows: per_query.QueryRows,
    gt: GroundTruth,
    resampling: Resampling | None,
) -> MatchingMetrics:
    """``metrics`` with its per-query table, from the counts the figures came from."""
    ranked = per_query.TrueRanks(
        truth.query, truth.score, positions.ranks(counts), counts.misses_ge
    )
    groups = resampling.groups if resampling is not None else None
    return replace(metrics, queries=per_query.table(gt, ranked, rows, groups))


def _check_repeats(source: Source, batch_bytes: int, spill: Spill, encoder: BatchEncoder) -> None:
    """A repeated pair, named by its first two lines: the earliest row whose pair an
    earlier row holds. The keys are sorted in place (8 bytes a row): InputError
    naming the way out when this machine's memory cannot hold them. A repeated key is
    checked on the ids, read again (two pairs can share a key)."""
    _memory_for_keys(source, spill.rows)
    keys = np.empty(spill.rows, dtype=np.uint64)
    at = 0
    for chunk in spill.chunks(("key",)):
        keys[at : at + len(chunk["key"])] = chunk["key"]
        at += len(chunk["key"])
    keys.sort()
    suspects = kernel.distinct(keys[1:][keys[1:] == keys[:-1]])
    del keys
    if not suspects.size:
        return
    found = _first_repeat(iter_pairs(source, batch_bytes), encoder, suspects)
    if found is None:  # keys shared by different pairs only
        return
    (q, r), copies = found
    raise InputError(source.where, duplicate_reason(q, r, copies), _first_two(source, (q, r)))


def _first_two(source: Source, pair: tuple[str, str]) -> str | None:
    """Where the first two rows holding ``pair`` are: lines of a CSV file (a name that
    does not say CSV is one when the decision resolved it so), rows of a table in
    memory by their labels; None for a Parquet file."""
    if source.row_labels is not None:
        import pyarrow.compute as pc

        same = pc.and_(
            pc.equal(source.pairs.query, pair[0]), pc.equal(source.pairs.reference, pair[1])
        )
        rows = np.flatnonzero(same.to_numpy(zero_copy_only=False))
        return f"rows {source.row_labels[rows[0]]} and {source.row_labels[rows[1]]}"
    lines = lines_holding(source, pair) if source.format == "csv" else []
    return f"lines {lines[0]} and {lines[1]}" if len(lines) == 2 else None


def _first_repeat(
    batches: Iterator, encoder: BatchEncoder, suspects: np.ndarray
) -> tuple[tuple[str, str], int] | None:
    """((query id, reference id), copies) of the earliest row whose pair an earlier row
    holds, among the rows whose key is a suspect; None when no pair repeats."""
    seen: dict[tuple[str, str], int] = {}
    first = None
    for pairs in batches:
        rows = np.flatnonzero(kernel.among(encoder.keys(pairs), suspects))
        if not rows.size:
            continue
        picked = np.asarray(rows)
        for pair in zip(
            pairs.query.take(picked).to_pylist(), pairs.reference.take(picked).to_pylist()
        ):
            seen[pair] = seen.get(pair, 0) + 1
            if first is None and seen[pair] == 2:
                first = pair
    return None if first is None else (first, seen[first])


def reference_counts(source: Source, batch_bytes: int):
    """(distinct reference ids, rows of each) of the file, read again: asked for only
    when the coverage warnings must look at the ids (``coverage.needs_id_check``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts, held = [], 0
    for pairs in iter_pairs(source, batch_bytes):
        counted = pc.value_counts(pairs.reference)
        parts.append(pa.table({"id": counted.field("values"), "n": counted.field("counts")}))
        held += len(counted)
        if held > (1 << 22) and len(parts) > 1:  # merge: the distinct ids, not every batch's
            parts, held = [_summed(parts)], 0
    if not parts:
        return strings([]), np.zeros(0, np.int64)
    total = _summed(parts)
    return total.column("id").combine_chunks(), total.column("n").to_numpy()


def _summed(parts: list):
    """One table of (id, n): the parts' rows added up by id."""
    import pyarrow as pa

    table = pa.concat_tables(parts).group_by("id").aggregate([("n", "sum")])
    return pa.table({"id": table.column("id"), "n": table.column("n_sum")})


def _memory_for_keys(source: Source, rows: int) -> None:
    # asked through the module, so the probe a caller points elsewhere is the one asked
    need, free = rows * np.dtype(np.uint64).itemsize, memory.available_bytes()
    if need > free:
        raise InputError(
            source.where,
            f"{rows:,} pairs: the repeat check holds {need / 2**30:.1f} GiB of pair keys, "
            f"more than the {free / 2**30:.1f} GiB of memory available; free memory or "
            "score it on a Spark cluster (--engine spark --master URL)",
        )


@dataclass
class Counted:
    """Pass 2's sums: the figures' counts, and with resampling the intervals' and groups'."""

    counts: positions.Counts
    levels: np.ndarray  # float64 (T,): the true scores, decreasing (stats.weighted.levels_of)
    by_code: list | None  # each group code's levels (groups.code_levels); None: no groups
    misses: np.ndarray | None = None  # int64 (T, B), stats.weighted.miss_counts' first
    optimistic: np.ndarray | None = None  # int64 (T,)
    code_counts: list[np.ndarray] | None = None  # groups.code_miss_counts, summed


def _count(read: Read, drawn: weighted.Drawn | None) -> tuple[positions.TrueScores, Counted]:
    """The true scores and every count of the rows read, one chunk at a time (with
    ``drawn``, the resampling's weighted counts too)."""
    r = drawn.r if drawn is not None else None
    true_query, true_score = read.true_pairs
    truth = positions.TrueScores.of(true_query, true_score)
    by_code = None
    if r is not None and r.groups is not None:
        # imported when groups are given: a run without them never loads the group tables
        from disc21spark.matching.stats import groups as group_stats

        by_code = group_stats.code_levels(truth.score, r.groups.codes[truth.query], r.groups.none)
    levels = weighted.levels_of(truth.score)
    counted = Counted(positions.Counts.zero(truth), levels, by_code)
    for chunk in read.chunks():
        query, label, score = chunk["query"].astype(np.int64), chunk["label"], chunk["score"]
        miss = ~label
        # the levels each non-match reaches: one search for the figures' and the intervals'
        reach = weighted.Reach.of(levels, score[miss])
        counted.counts.add(positions.count_rows(truth, query, label, score, reach.reached))
        if drawn is None:
            continue
        fixed = query[miss] < 0
        at = np.maximum(query[miss], 0)
        parts = weighted.miss_counts(reach, drawn.keys[at], fixed, drawn)
        counted.misses = _plus(counted.misses, parts[0])
        counted.optimistic = _plus(counted.optimistic, parts[1])
        if by_code is not None:
            more = group_stats.code_miss_counts(by_code, score[miss], query[miss], drawn)
            counted.code_counts = (
                more
                if counted.code_counts is None
                else [a + b for a, b in zip(counted.code_counts, more)]
            )
    return truth, counted


def _plus(total: np.ndarray | None, more: np.ndarray) -> np.ndarray:
    return more if total is None else total + more


def _with_statistics(
    metrics: MatchingMetrics,
    truth: positions.TrueScores,
    counted: Counted,
    gt: GroundTruth,
    drawn: weighted.Drawn,
) -> MatchingMetrics:
    """``metrics`` with the intervals and tie sensitivity (and the group table) from the
    summed counts: ``stats.weighted.uncertainty_of``, as every engine finishes them."""
    r = drawn.r
    levels = counted.levels
    t = len(levels)
    misses = counted.misses if counted.misses is not None else np.zeros((t, r.resamples), np.int64)
    optimistic = counted.optimistic if counted.optimistic is not None else np.zeros(t, np.int64)
    pairs = (drawn.keys[truth.query], truth.score, positions.ranks(counted.counts))
    uncertainty = weighted.uncertainty_of(levels, misses, optimistic, pairs, drawn)
    metrics = replace(metrics, uncertainty=uncertainty)
    if r.groups is None:
        return metrics
    from disc21spark.matching.stats import groups as group_stats

    codes = r.groups.codes
    table = group_stats.table(
        r.groups,
        counted.by_code,
        counted.code_counts,
        (*pairs, codes[truth.query]),
        (drawn.positive_keys, group_stats.positive_codes(gt, codes)),
        drawn,
    )
    return replace(metrics, groups=table)
