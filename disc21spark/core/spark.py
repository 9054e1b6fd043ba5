"""Small Spark idioms every stage uses: one frame from several, a setting for a while,
the output columns of a mapInArrow function, SQL statements over frames (an aggregation
among them), and a word as an SQL literal."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import reduce

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
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
    """``rows`` grouped by ``keys`` (SQL text each, a column or ``TEXT AS name``), the
    ``named`` aggregates (name → SQL text): one SQL statement Spark parses in one call,
    over ``rows`` as a temporary view for that call only (its plan holds the frame's, so a
    cached frame is read from the cache). A Column object a key or aggregate costs about
    six py4j calls (PySpark's ``F.expr`` records its call site), the statement five in
    all (issue 47). Built by the JVM's ``functions.expr``, a call an expression and no
    view, a run took as long (docs/design.md, Cost model)."""
    select = ", ".join([*keys, *(f"{text} AS `{name}`" for name, text in named.items())])
    group = ", ".join(_ALIASED.sub(r"\1", key) for key in keys)
    return with_views(lambda rows: f"SELECT {select} FROM {rows} GROUP BY {group}", rows=rows)


# a key's trailing alias, which GROUP BY must not repeat (``spark.sql.groupByAliases``
# may be off in the caller's session)
_ALIASED = re.compile(r"^(.*) AS `?\w+`?$", re.DOTALL)


def with_views(statement: Callable[..., str], **frames: DataFrame) -> DataFrame:
    """The frame of the SQL ``statement``, called with a view's name for each of
    ``frames`` by its keyword: each a temporary view of a name of its own, dropped once
    Spark has analysed the statement (the frame's plan holds the views': nothing else in
    the session sees them) and no cached frame uncached. Spark's error on the statement
    passes on; a failed drop is raised only when nothing else is."""
    spark = next(iter(frames.values())).sparkSession
    views = [f"disc21spark_{uuid.uuid4().hex}" for _ in frames]
    try:
        for view, frame in zip(views, frames.values()):
            frame.createOrReplaceTempView(view)
        text = statement(**{key: f"`{view}`" for key, view in zip(frames, views)})
        # the session's own sql, not SparkSession.sql: that one hands the JVM an empty
        # list of arguments, four py4j calls more
        found = DataFrame(spark._jsparkSession.sql(text), spark)
    except BaseException:
        _drop_views(spark, views, quiet=True)
        raise
    _drop_views(spark, views)
    return found


def _drop_views(spark: SparkSession, views: list[str], quiet: bool = False) -> None:
    """Drop ``views`` (those never created are no matter), each whatever befalls the
    others; the first failure raised unless ``quiet`` (another error is on its way out:
    a JVM that failed fails these calls too). The session catalog's drop: the one of
    ``spark.catalog`` also uncaches every cached frame of the same result (a view of the
    cached rows, as the census's, would drop their cache)."""
    failed = None
    for view in views:
        try:
            spark._jsparkSession.sessionState().catalog().dropTempView(view)
        except Exception as exc:
            failed = failed or exc
    if failed is not None and not quiet:
        raise failed


def sql_text(value: str) -> str:
    """``value``, one of the package's fixed words, as a Spark SQL string literal. It may
    hold no quote, backslash or ``${``: escapes read differently under
    ``spark.sql.parser.escapedStringLiterals``, and ``${...}`` may be substituted."""
    if any(s in value for s in ("'", "\\", "${")):
        raise ValueError(f"not a plain SQL literal: {value!r}")
    return f"'{value}'"
