"""The in-process engine: one submission scored by the numpy specification, read with Arrow.

Most runs score one file of at most 500,000 pairs on a laptop, where starting a JVM costs
more than the work. This engine reads the file with Arrow's multi-threaded CSV reader
under the official reader's rules as the Spark job applies them (the line stripped and
split on commas, no quoting, each field stripped, a ``query_id,reference_id,score`` line
skipped), turns the ids into integer codes (dictionary encoding, then a join on integers
with the ground truth) and calls ``spec.evaluate_encoded``: the figures are the
specification's, bit for bit, and the Spark plan is held equal to the same function.

A bad file gets the Spark job's message: the fast path only notices that something is
wrong, then the file is read again line by line in Python to name the first bad line
with the same rules and words (``rows.line_problem``). Nothing here imports PySpark.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from disc21spark.core import damage
from disc21spark.core.errors import InputError, first_line
from disc21spark.core.phases import Phases
from disc21spark.matching import coverage, spec
from disc21spark.matching.arrays import numbers, strings
from disc21spark.matching.model import GroundTruth, MatchingMetrics
from disc21spark.matching.rows import (
    PREDICTION_COLUMNS,
    REPLACEMENT,
    WHITESPACE,
    duplicate_reason,
    line_problem,
    max_results_error,
    parquet_problem,
    parse_csv_line,
)
from disc21spark.matching.source import (
    NotForThisEngine,
    Source,
    file_format,
    local_path,
    parquet_table,
)
from disc21spark.matching.stats import local as stats_local
from disc21spark.matching.stats.model import Resampling

__all__ = ["NotForThisEngine", "Source", "local_path", "read_pairs", "score_source", "unsupported"]


@dataclass(frozen=True)
class Pairs:
    """One submission's pairs after the checks: stripped ids and finite scores."""

    query: pa.Array
    reference: pa.Array
    score: np.ndarray


_HEADER = strings(PREDICTION_COLUMNS)


def unsupported(path: str, fmt: str = "auto") -> str | None:
    """Why this engine cannot read the local file ``path`` as Spark would (None: it can)."""
    plain = local_path(path)
    if plain is None:
        return f"{path}: not one local file"
    return format_problem(path, fmt, plain)


def format_problem(path: str, fmt: str, plain: str | None = None) -> str | None:
    """Why this engine cannot read ``path`` (any file system) as Spark would, from its
    name, and for a local Parquet file (``plain``) from its schema; None: it can."""
    try:
        kind = file_format(path, fmt)
    except NotForThisEngine as exc:
        return str(exc)
    if kind == "parquet" and plain is not None:
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(plain)
        except (pa.ArrowInvalid, OSError, UnicodeDecodeError):  # a name that is not UTF-8
            return None  # unreadable: this engine says so in one line, as Spark would
        if not _plain_types(schema):
            return f"{path}: ids that are not strings or a score that is not a number"
    return None


def _plain_types(schema: pa.Schema) -> bool:
    """String ids and a numeric score: the Parquet columns read alike by Arrow and Spark."""
    if not all(c in schema.names for c in PREDICTION_COLUMNS):
        return True  # a missing column: said in one line by the reader
    q, r, s = (schema.field(c).type for c in PREDICTION_COLUMNS)
    text = pa.types.is_string
    return text(q) and text(r) and (pa.types.is_floating(s) or pa.types.is_integer(s))


def read_pairs(source: Source, fmt: str = "auto") -> Pairs:
    """The checked pairs of one file; an InputError naming the first bad row."""
    if source.fmt(fmt) == "parquet":
        return _read_parquet(source)
    return _read_csv(source)


def _read_csv(source: Source) -> Pairs:
    import pyarrow.csv as csv

    bad_rows: list[object] = []

    def invalid(row) -> str:  # a wrong field count, or a line of blanks only
        if row.text.strip(WHITESPACE):
            bad_rows.append(row)
        return "skip"

    hook = sys.unraisablehook
    # a line that is not UTF-8 fails inside Arrow's call of ``invalid`` (pyarrow decodes
    # its text first) and pyarrow prints that trace; the line is named below instead
    sys.unraisablehook = lambda _: None
    try:
        table = csv.read_csv(
            source.arrow_input(),
            read_options=csv.ReadOptions(column_names=list(PREDICTION_COLUMNS)),
            parse_options=csv.ParseOptions(
                quote_char=False, escape_char=False, invalid_row_handler=invalid
            ),
            convert_options=csv.ConvertOptions(
                column_types={c: pa.string() for c in PREDICTION_COLUMNS},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        if "Empty CSV file" in str(exc):
            return Pairs(strings([]), strings([]), np.zeros(0))
        # bytes that are not UTF-8, a line Arrow's handler could not see: the line by name
        damaged = _damaged_stream(source)
        raise damaged or _first_bad_line(source, f"cannot be read ({first_line(exc)})") from None
    except (OSError, EOFError) as exc:
        damaged = _damaged_stream(source)
        raise damaged or InputError(source.where, f"cannot be read ({first_line(exc)})") from None
    finally:
        sys.unraisablehook = hook
    query, reference, raw = (
        pc.utf8_trim(table.column(c).combine_chunks(), WHITESPACE) for c in PREDICTION_COLUMNS
    )
    header = pc.and_(
        pc.and_(pc.equal(query, _HEADER[0]), pc.equal(reference, _HEADER[1])),
        pc.equal(raw, _HEADER[2]),
    )
    if pc.any(header).as_py():
        keep = pc.invert(header)
        query, reference, raw = query.filter(keep), reference.filter(keep), raw.filter(keep)
    score = _scores(raw)
    if bad_rows or score is None or _any_empty(query, reference) or _any_replaced(query, reference):
        raise _first_bad_line(source)
    return Pairs(query, reference, score)


def _refuse_bytes_not_utf8(where: str, query: pa.Array, reference: pa.Array) -> None:
    """An id of a Parquet file whose bytes are not UTF-8 (Arrow does not check a page's
    strings; a flipped bit makes one): refused, the row named, as a CSV line is. Found by
    tests/test_fuzz.py (it was an internal error further on)."""
    bad = []
    for column in (query, reference):
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            texts = column.cast(pa.binary()).to_pylist()
            bad.append(next(i for i, t in enumerate(texts) if t is not None and not _utf8(t)))
    if bad:
        i = min(bad)
        q, r = (
            c.cast(pa.binary())[i].as_py().decode("utf-8", "replace") for c in (query, reference)
        )
        raise InputError(
            where,
            "not UTF-8 text (an id's bytes are not UTF-8)",
            f"row query_id={q!r}, reference_id={r!r}",
        )


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _damaged_stream(source: Source) -> InputError | None:
    """A damaged ``.gz`` file in ``core/damage.py``'s words (Spark's side gives the same),
    before any line of it is looked at: on Spark too a damaged stream fails the read."""
    if not source.where.lower().endswith(".gz"):
        return None
    with source.open_raw() as raw:
        reason = damage.gzip_reason(raw)
    return InputError(source.where, reason) if reason else None


def _scores(raw: pa.Array) -> np.ndarray | None:
    """Finite scores, -0.0 made 0.0 (they tie in the official sort); None if any is not."""
    try:
        score = numbers(pc.cast(raw, pa.float64()))
    except pa.ArrowInvalid:
        return None
    if not np.isfinite(score).all():
        return None
    return score + 0.0


def _any_empty(*columns: pa.Array) -> bool:
    # a length cast to bool is false for an empty string
    return any(pc.any(pc.invert(pc.cast(pc.utf8_length(c), pa.bool_()))).as_py() for c in columns)


def _any_replaced(*columns: pa.Array) -> bool:
    # U+FFFD in an id is what Spark's reader makes of bytes that are not UTF-8: refused alike
    return any(pc.any(pc.match_substring(c, REPLACEMENT)).as_py() for c in columns)


LONGEST_LINE = 1 << 20  # characters: a DISC21 prediction line has under a hundred


def _first_bad_line(
    source: Source, otherwise: str = "cannot be read (a line Arrow refused)"
) -> InputError:
    """The first bad line of the file, named with the Spark job's words. A line is read
    LONGEST_LINE characters at most: a gzip bomb's one 1.5 GB line is refused in bounded
    memory instead of being read whole (5.4 GB before)."""
    where = source.where
    with source.open_text() as fh:
        for number, line in enumerate(iter(lambda: fh.readline(LONGEST_LINE + 2), ""), start=1):
            if len(line.rstrip("\r\n")) > LONGEST_LINE:
                return InputError(
                    where,
                    f"longer than {LONGEST_LINE:,} characters (not a line of predictions)",
                    f"line {number}",
                )
            if not line.strip(WHITESPACE + "\n"):
                continue
            problem = line_problem(parse_csv_line(line.rstrip("\n")), _parse_float)
            if problem:
                return InputError(where, problem, f"line {number}")
    return InputError(where, otherwise)


def _parse_float(text: str) -> float | None:
    """A score as Arrow reads it (the fast path's rule), or None."""
    try:
        return pc.cast(strings([text]), pa.float64())[0].as_py()
    except pa.ArrowInvalid:
        return None


def _read_parquet(source: Source) -> Pairs:
    where = source.where
    table = parquet_table(source)
    names = table.column_names
    missing = [c for c in PREDICTION_COLUMNS if c not in names]
    if missing:
        has = ", ".join(names)
        raise InputError(where, f"missing column {missing[0]!r} (has: {has})")
    if not _plain_types(table.schema):
        raise NotForThisEngine(f"{where}: ids that are not strings or a score that is not a number")
    query, reference = (table.column(c).combine_chunks() for c in PREDICTION_COLUMNS[:2])
    _refuse_bytes_not_utf8(where, query, reference)
    score = table.column("score").combine_chunks().cast(pa.float64())
    values = score.to_numpy(zero_copy_only=False)
    problem = parquet_problem(query, reference, score, values)
    if problem is not None:
        (q, r), reason = problem
        raise InputError(where, reason, f"row query_id={q!r}, reference_id={r!r}")
    return Pairs(query, reference, values + 0.0)


def encode(pairs: Pairs, gt: GroundTruth) -> spec.Encoded:
    """Integer codes for the specification: the ids are dictionary-encoded, then joined
    with the ground truth on integers (a query's index, a positive reference's index)."""
    queries = pc.dictionary_encode(pairs.query)
    references = pc.dictionary_encode(pairs.reference)
    query = numbers(queries.indices).astype(np.int64)
    reference = numbers(references.indices).astype(np.int64)
    known = strings(gt.query_ids)
    # index in the ground truth of each distinct query id (-1: unknown), then per pair
    index_of_query = _index_in(queries.dictionary, known)[query]
    positive_refs = np.unique(gt.positive_references.astype(str))
    index_of_reference = _index_in(references.dictionary, strings(positive_refs))[reference]
    # the positive pairs as the same integer keys: (query index, positive reference index)
    positive_query = _index_in(strings(gt.positive_queries), known)
    positive_reference = np.searchsorted(positive_refs, gt.positive_references.astype(str))
    positive_keys = positive_query * len(positive_refs) + positive_reference
    matched = (index_of_query >= 0) & (index_of_reference >= 0)
    keys = index_of_query * len(positive_refs) + index_of_reference
    label = matched & np.isin(keys, positive_keys)
    return spec.Encoded(
        query=query,
        pair=query * max(len(references.dictionary), 1) + reference,
        label=label,
        score=pairs.score,
        unknown=index_of_query < 0,
    )


def _index_in(values: pa.Array, value_set: pa.Array) -> np.ndarray:
    found = pc.index_in(values, value_set=value_set)
    missing = pa.Array.from_buffers(
        pa.int32(), len(found), [None, pa.py_buffer(np.full(len(found), -1, dtype=np.int32))]
    )
    return numbers(pc.coalesce(found, missing)).astype(np.int64)


def score_file(path: str, *args: Any, **kw: Any) -> MatchingMetrics:
    """``score_source`` of the local file ``path``; ``path`` as given names it in the
    --max-results message and the warnings, as on Spark."""
    return score_source(Source.local(path), *args, given=path, **kw)


def score_source(
    source: Source,
    fmt: str,
    gt: GroundTruth,
    max_results: int,
    curve_points: int,
    phases: Phases | None = None,
    announce: bool = True,
    given: str | None = None,
    resampling: Resampling | None = None,
) -> MatchingMetrics:
    """One submission's metrics, in this process; the Spark job's checks and errors
    (InputError naming ``source.where``, NotForThisEngine). ``announce``: print the
    coverage warnings here (a pool's task leaves it to the driver); ``given``: the name
    the user gave (default ``source.where``); ``resampling``: add the intervals and tie
    sensitivity (stats/)."""
    phases = phases or Phases()
    given = given or source.where
    with phases.phase("read") as note:
        pairs = read_pairs(source, fmt)
        note["rows"] = len(pairs.score)
        note["detail"] = "Arrow, in process"
    with phases.phase("validate") as note:
        error = max_results_error(given, len(pairs.score), max_results)
        if error is not None:
            raise error
        encoded = encode(pairs, gt)
        _check_repeats(source, pairs, encoded)
        note["rows"] = len(pairs.score)
    with phases.phase("score") as note:
        metrics = spec.evaluate_encoded(encoded, gt, curve_points)
        where = given if announce else None
        metrics = coverage.check_local(pairs.query, pairs.reference, gt, metrics, where)
        note["rows"] = metrics.n_predictions
        note["detail"] = f"{metrics.n_true_positives:,} true positives"
    if resampling is not None:
        with phases.phase("bootstrap") as note:
            metrics = with_statistics(metrics, pairs, encoded, gt, resampling)
            note["rows"] = metrics.n_predictions
            note["detail"] = f"{resampling.resamples:,} resamples"
    return metrics


def with_statistics(
    metrics: MatchingMetrics, pairs: Pairs, encoded: spec.Encoded, gt: GroundTruth, r: Resampling
) -> MatchingMetrics:
    """``metrics`` with the intervals and tie sensitivity, and the group table when
    ``r.groups`` is given (stats/local.py)."""
    metrics = replace(metrics, uncertainty=stats_local.measure(pairs.query, encoded, gt, r))
    if r.groups is not None:
        metrics = replace(metrics, groups=stats_local.measure_groups(pairs.query, encoded, gt, r))
    return metrics


def _check_repeats(source: Source, pairs: Pairs, encoded: spec.Encoded) -> None:
    """A repeated pair, named as the Spark job names it (the first repeat in the file)."""
    order = np.argsort(encoded.pair, kind="stable")
    same = encoded.pair[order][1:] == encoded.pair[order][:-1]
    if not same.any():
        return
    row = int(order[1:][same].min())  # the earliest row that repeats an earlier one
    copies = int(np.count_nonzero(encoded.pair == encoded.pair[row]))
    q, r = pairs.query[row].as_py(), pairs.reference[row].as_py()
    lines = _lines_of(source, (q, r)) if source.fmt("auto") == "csv" else []
    raise InputError(
        source.where,
        duplicate_reason(q, r, copies),
        f"lines {lines[0]} and {lines[1]}" if len(lines) == 2 else None,
    )


def _lines_of(source: Source, wanted: tuple[str, str], limit: int = 2) -> list[int]:
    found = []
    with source.open_text() as fh:
        for number, line in enumerate(fh, start=1):
            if parse_csv_line(line.rstrip("\n"))[:2] == wanted:
                found.append(number)
                if len(found) == limit:
                    break
    return found
