"""Spark's read of a CSV file splits each line as the official reader does: the line
stripped of spaces, tabs and carriage returns, split on commas, each field stripped.
The read skips the strips on a line holding none of those characters; a file mixing
both kinds of line is read as if every line and field were stripped."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from disc21spark.matching.rows import WHITESPACE
from disc21spark.matching.spark.read import read_predictions

# ids, scores, commas and the stripped characters; a lone carriage return ends a line
# for Hadoop's line reader, so it is written only before a newline
TEXT = st.text(alphabet="Qr7.e-,  \t\t", max_size=14)
LINES = st.lists(st.tuples(TEXT, st.sampled_from(["\n", "\r\n", " \r\n", "\t\n"])), max_size=40)


def official(line: str) -> tuple[str | None, ...] | None:
    """(query_id, reference_id, score_raw, extra) of one line as the read must give it,
    every line and field stripped (None: a blank line, which the read leaves out)."""
    parts = line.strip(WHITESPACE).split(",")
    if parts == [""]:
        return None
    fields = [p.strip(WHITESPACE) or None for p in parts[:3]] + [None] * (3 - len(parts[:3]))
    extra = parts[3] if len(parts) > 3 else None  # kept as split, for the message
    return (*fields, extra)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=LINES)
@example(lines=[("Q1,R1,0.5", "\n"), (" Q1 ,\tR2\t, 0.5 ", "\r\n"), ("Q2,R2,1,x ", "\n")])
@example(lines=[("\t", "\n"), ("Q1,R1", " \r\n"), (",,", "\n"), ("Q 1,R\t1,.5", "\n")])
# the fourth field is kept as split, spaces and all (the line's own strip leaves it)
@example(lines=[("Q2,R2,1, x,y", "\n"), ("Q2,R2,1,x\t,y", "\n")])
def test_each_line_and_field_is_stripped_as_the_official_reader_does(
    spark, tmp_path_factory, lines
):
    path = tmp_path_factory.mktemp("read") / "p.csv"
    text = "".join(body + end for body, end in lines)
    path.write_bytes(text.encode())
    wanted = [found for body in re.split(r"\r\n|\n", text)[:-1] if (found := official(body))]
    columns = ["query_id", "reference_id", "score_raw", "extra"]
    rows = read_predictions(spark, str(path), "csv").orderBy("order").select(columns).collect()
    assert [tuple(r) for r in rows] == wanted
