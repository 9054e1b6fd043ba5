"""The ground truth's bulk parse of a CSV file's lines (``rows.parse_plain_ground_truth``)
against the row-by-row one (``rows.parse_ground_truth``), which names every problem."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from disc21spark.core.errors import InputError
from disc21spark.matching.inprocess import source
from disc21spark.matching.rows import (
    Row,
    parse_csv_line,
    parse_ground_truth,
    parse_plain_ground_truth,
)
from disc21spark.resolve import resolve

DEV = Path(__file__).resolve().parents[1] / "data" / "disc21_dev_ground_truth.csv"
FIELD = st.sampled_from(["Q1", "Q2", "Q3", "R1", "R2", "", " Q1", "Q2 ", "query_id", "é"])
CLEAN = st.tuples(st.sampled_from(["Q1", "Q2", "Q3", "Q4"]), st.sampled_from(["R1", "R2", ""]))
LINE = st.one_of(
    CLEAN.map(",".join),
    CLEAN.map(",".join),
    st.sampled_from(["", "query_id,reference_id", " ", "Q1,R1,R2"]),
    st.tuples(FIELD, FIELD).map(",".join),
)


def row_by_row(lines: list[str]):
    """What the ground truth's reader gives without the bulk parse (GroundTruth or the error)."""
    rows = [
        Row(f"line {i}", parse_csv_line(line)) for i, line in enumerate(lines, 1) if line.strip()
    ]
    try:
        return parse_ground_truth(rows, "gt.csv")
    except InputError as exc:
        return exc


def same(a, b) -> bool:
    fields = ("query_ids", "positive_queries", "positive_references")
    return (
        all(np.array_equal(getattr(a, f), getattr(b, f)) for f in fields) and a.source == b.source
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=12))
def test_the_bulk_parse_is_the_row_by_row_one_or_steps_aside(lines):
    bulk = parse_plain_ground_truth(lines, "gt.csv")
    slow = row_by_row(lines)
    if bulk is not None:
        assert not isinstance(slow, InputError) and same(bulk, slow)


def test_the_dev_ground_truth_takes_the_bulk_parse():
    lines = source.local_lines(resolve(str(DEV)))
    bulk = parse_plain_ground_truth(lines, str(DEV))
    assert bulk is not None
    rows = source.local_table_rows(resolve(str(DEV)), ("query_id", "reference_id"))
    assert same(bulk, parse_ground_truth(rows, str(DEV)))
    assert bulk.n_queries == 25_000


def test_a_file_that_cannot_be_read_has_no_lines(tmp_path):
    assert source.local_lines(resolve(str(tmp_path / "missing.csv"))) is None
    (tmp_path / "gt.parquet").write_bytes(b"PAR1")
    assert source.local_lines(resolve(str(tmp_path / "gt.parquet"))) is None
