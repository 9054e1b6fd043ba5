"""Small Spark idioms every stage uses: one frame from several, a setting for a while,
the output columns of a mapInArrow function, an aggregation written as SQL text, and a
word as an SQL literal."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import reduce

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType


def union_all(frames: Sequence[DataFrame]) -> DataFrame:
    """The frames' rows as one frame, columns matched by name (left to right, so the plan
    is the one a hand-written chain of unionByName gives)."""
    return reduce(DataFrame.unionByName, frames)


@contextmanager
def spark_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Session settings for the duration of the block, then the previous values: a job
    must not leave its tuning behind in a session the caller goes on using."""
    previous = {key: spark.conf.get(key) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            spark.conf.set(key, value)


def arrow_output(fields: list[tuple[str, pa.DataType]]) -> tuple[pa.Schema, StructType]:
    """A mapInArrow function's output declared once: the Arrow schema its batches are
    built with, and the same columns as the Spark schema the call names."""
    schema = pa.schema(fields)
    return schema, from_arrow_schema(schema)


def aggregated(rows: DataFrame, keys: list[str], named: dict[str, str]) -> DataFrame:
    """``rows`` grouped by ``keys`` (SQL text each), the ``named`` aggregates (name → SQL
    text): each expression parsed by Spark in one call, not a Column object built a py4j
    call at a time (issue 47). Not ``spark.sql`` over a temporary view: tried for the
    census, the count that followed read the file again, not the cached rows."""
    grouped = rows.groupBy(*(F.expr(k) for k in keys))
    # the name in the text: Column.alias alone costs more round trips than the parse
    return grouped.agg(*(F.expr(f"{text} AS `{name}`") for name, text in named.items()))


def sql_text(value: str) -> str:
    """``value``, one of the package's fixed words, as a Spark SQL string literal. It may
    hold no quote, backslash or ``${``: escapes read differently under
    ``spark.sql.parser.escapedStringLiterals``, and ``${...}`` may be substituted."""
    if any(s in value for s in ("'", "\\", "${")):
        raise ValueError(f"not a plain SQL literal: {value!r}")
    return f"'{value}'"
