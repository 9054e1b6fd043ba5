"""The rules and words of a prediction or ground-truth row, shared by both engines.

The Spark job applies them as column expressions (``validate.py``), the in-process engine
with Arrow and, for the one bad line it names, here in plain Python; the texts of the
messages live only here. Nothing here imports PySpark.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from disc21spark.core.errors import InputError
from disc21spark.core.formats import PREDICTION_COLUMNS  # the columns: core's word
from disc21spark.matching.model import GroundTruth

GROUND_TRUTH_COLUMNS = ("query_id", "reference_id")
WHITESPACE = " \t\r"
FIELDS = "expected 3 fields: query_id,reference_id,score"
MORE_FIELDS = f"{FIELDS}, found more"
MISSING_SCORE = f"missing score ({FIELDS})"
NON_NUMERIC = "missing or non-numeric score"
# Spark's text reader replaces a byte that is not UTF-8 by U+FFFD, Arrow's refuses the
# file: both engines then name the line (the official reader stops with a decode error)
REPLACEMENT = "\ufffd"
NOT_UTF8 = "not UTF-8 text (a byte the UTF-8 decoder replaced by U+FFFD)"


@dataclass(frozen=True)
class Row:
    """One record of a small table read on the driver, with where it came from."""

    where: str  # "line 12" or "row 12"
    fields: tuple[str | None, ...]


def parse_csv_line(line: str) -> tuple[str, ...]:
    """Fields of one line: the line stripped and split on commas, each field stripped."""
    return tuple(f.strip(WHITESPACE) for f in line.strip(WHITESPACE).split(","))


def not_a_number(text: str) -> str:
    return f"score '{text}' is not a number"


def not_finite(text: str) -> str:
    return f"score '{text}' is not finite"


def line_problem(fields: tuple[str, ...], parse: Callable[[str], float | None]) -> str | None:
    """What is wrong with one CSV line's fields (None: a fine line or the header)."""
    if fields == PREDICTION_COLUMNS:
        return None
    if any(REPLACEMENT in f for f in fields):
        return NOT_UTF8
    if len(fields) > 3:
        return MORE_FIELDS
    q, r, raw = (list(fields) + [""] * 3)[:3]
    if not q:
        return "empty query_id"
    if not r:
        return "empty reference_id"
    if not raw:
        return MISSING_SCORE
    value = parse(raw)
    if value is None:
        return not_a_number(raw)
    if not math.isfinite(value):
        return not_finite(raw)
    return None


def spark_double_text(value: float) -> str:
    """A double as Spark prints it in a message (Infinity, -Infinity, NaN)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def parquet_problem(query, reference, score, values: np.ndarray):
    """((query id, reference id), reason) of the first bad Parquet row, or None.
    ``query``, ``reference``, ``score``: Arrow arrays; ``values``: the scores as floats."""
    found = first_bad_row(query, reference, score, values)
    if found is None:
        return None
    i, reason = found
    return (query[i].as_py(), reference[i].as_py()), reason


def first_bad_row(query, reference, score, values: np.ndarray) -> tuple[int, str] | None:
    """(position, reason) of the first bad row of typed columns (Parquet, or a table in
    memory), or None; the arguments as for ``parquet_problem``."""
    null_s = np.asarray(score.is_null().to_numpy(zero_copy_only=False))
    bad_score = null_s | ~np.isfinite(np.where(null_s, 0.0, values))
    empty_q, empty_r = _empty(query), _empty(reference)
    rows = np.flatnonzero(empty_q | empty_r | bad_score)
    if rows.size == 0:
        return None
    i = int(rows[0])
    if empty_q[i]:
        return i, "empty query_id"
    if empty_r[i]:
        return i, "empty reference_id"
    if null_s[i]:
        return i, NON_NUMERIC
    return i, not_finite(spark_double_text(float(values[i])))


def _empty(column) -> np.ndarray:
    import pyarrow.compute as pc

    length = pc.fill_null(pc.utf8_length(column), 0)
    return np.asarray(length.to_numpy(zero_copy_only=False)) == 0


def max_results_error(source: str, n_rows: int, max_results: int) -> InputError | None:
    if max_results and n_rows > max_results:
        return InputError(
            source,
            f"{n_rows:,} predictions, more than --max-results {max_results:,} "
            "(pass --max-results 0 for no limit)",
        )
    return None


def duplicate_reason(query_id: str, reference_id: str, n: int) -> str:
    return (
        f"duplicate pair ({query_id}, {reference_id}) appears {n} times; "
        "the official scorer rejects duplicate predictions"
    )


def parse_ground_truth(rows: list[Row], source: str) -> GroundTruth:
    """Validate ground-truth records: an empty reference_id marks a distractor query."""
    queries: dict[str, str] = {}
    pos_q: list[str] = []
    pos_r: list[str] = []
    seen: dict[tuple[str, str], str] = {}
    for row in rows:
        fields = tuple("" if f is None else f.strip() for f in row.fields)
        if fields == GROUND_TRUTH_COLUMNS:
            continue
        if len(fields) != 2:
            raise InputError(
                source, f"expected 2 fields: query_id,reference_id, found {len(fields)}", row.where
            )
        q, r = fields
        if REPLACEMENT in q or REPLACEMENT in r:
            raise InputError(source, NOT_UTF8, row.where)
        if not q:
            raise InputError(source, "empty query_id", row.where)
        if (q, r) in seen:
            raise InputError(
                source, f"duplicate ground-truth row ({q}, {r}), also on {seen[q, r]}", row.where
            )
        seen[q, r] = row.where
        if q in queries and (queries[q] == "" or r == ""):
            raise InputError(
                source,
                f"query {q} is listed both as a distractor and with a reference "
                f"(first on {seen[q, queries[q]]})",
                row.where,
            )
        queries.setdefault(q, r)
        if r:
            pos_q.append(q)
            pos_r.append(r)
    if not queries:
        raise InputError(source, "ground truth is empty")
    if not pos_q:
        raise InputError(source, "ground truth has no positive pair (every reference_id is empty)")
    return GroundTruth(
        source=source,
        query_ids=np.array(list(queries), dtype=object),
        positive_queries=np.array(pos_q, dtype=object),
        positive_references=np.array(pos_r, dtype=object),
    )


def parse_plain_ground_truth(lines: list[str], source: str) -> GroundTruth | None:
    """``parse_ground_truth`` of a CSV file's lines in bulk, for the usual file: the same
    GroundTruth when every line is a clean ``query_id,reference_id`` (ASCII, nothing to
    strip, no empty query, no repeated pair, no query both a distractor and with a
    reference, a positive pair); None otherwise, and the row-by-row parse then says what
    is wrong. A tenth of the time of building a Row per line."""
    text = "".join(lines)
    if not text.isascii() or any(c in text for c in " \t\x1f"):
        return None  # a field to strip (str.strip's ASCII whitespace splitlines leaves)
    pairs = [tuple(line.split(",")) for line in lines if line and line != "query_id,reference_id"]
    if any(len(p) != 2 or not p[0] for p in pairs) or len(set(pairs)) != len(pairs):
        return None
    distractors = {q for q, r in pairs if not r}
    positives = [(q, r) for q, r in pairs if r]
    if not positives or any(q in distractors for q, _ in positives):
        return None
    return GroundTruth(
        source=source,
        query_ids=np.array(list(dict.fromkeys(q for q, _ in pairs)), dtype=object),
        positive_queries=np.array([q for q, _ in positives], dtype=object),
        positive_references=np.array([r for _, r in positives], dtype=object),
    )
