"""What a library call is given: paths, pandas DataFrames, pyarrow Tables, Spark DataFrames.

Each input is told by its type without importing pandas or PySpark (a notebook that
never started Spark never pays for it); the options of a call are the command's options
(defaults from conf/defaults.ini through the command's own parser, its checks raising
InputError instead of exiting); and ``choose_engine`` asks ``disc21spark.engine``,
once per call, which engine scores it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from disc21spark.core.errors import InputError, column_list
from disc21spark.core.paths import is_plain
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.rows import Row, parse_ground_truth

PATH, ARROW, SPARK = "path", "arrow", "spark"


@dataclass(frozen=True)
class Engine:
    """The decision of one call: ``name`` "local" (this process) or "spark", the session
    Spark runs in (None in process), and ``choice``, the engine and plan as
    ``disc21spark.engine`` decided them (what the jobs receive)."""

    name: str
    spark: Any = None
    choice: Any = None


def kind(value: Any) -> str:
    """path, arrow (a pandas DataFrame or a pyarrow Table) or spark (a Spark DataFrame);
    TypeError for anything else."""
    if isinstance(value, (str, os.PathLike)):
        return PATH
    if isinstance(value, pa.Table):
        return ARROW
    module = type(value).__module__
    if module.startswith("pandas") and type(value).__name__ == "DataFrame":
        return ARROW
    if module.startswith("pyspark.sql") and type(value).__name__ == "DataFrame":
        return SPARK
    raise TypeError(
        f"expected a path, a pandas DataFrame, a pyarrow Table or a Spark DataFrame, "
        f"got {type(value).__name__}"
    )


def label(name: str, value: Any) -> str:
    """How an input names itself in a message: its path, or ``name`` and its type
    (``predictions (DataFrame)``), which names no file a reader could open by mistake."""
    if kind(value) == PATH:
        return os.fspath(value)
    return f"{name} ({type(value).__name__})"


def arrow_table(value: Any, source: str, columns: tuple[str, ...]) -> tuple[pa.Table, list]:
    """A pandas DataFrame or a pyarrow Table as an Arrow table of ``columns`` (ids as
    strings), and the label of each row in messages: the pandas index, else the position.
    InputError as ``arrow_columns`` raises it, and for ids that are neither text nor
    integers."""
    table, index = arrow_columns(value, source, columns)
    out = {}
    for name in columns:
        column = table.column(name).combine_chunks()
        if name != "score":
            column = _ids(column, name, source)
        out[name] = column
    return pa.table(out), index


def arrow_columns(value: Any, source: str, columns: tuple[str, ...]) -> tuple[pa.Table, list]:
    """The ``columns`` of a pandas DataFrame or a pyarrow Table as an Arrow table (types
    as Arrow gives them; other columns never converted), and each row's label. InputError
    for a column missing or named twice, and for a pandas column Arrow cannot convert
    (complex numbers; an object column mixing floats and text)."""
    names = [str(c) for c in (value.column_names if isinstance(value, pa.Table) else value.columns)]
    twice = [c for c in columns if names.count(c) > 1]
    if twice:
        raise InputError(source, f"column {twice[0]!r} named twice")
    missing = [c for c in columns if c not in names]
    if missing:
        raise InputError(source, f"missing column {missing[0]!r} (has: {column_list(names)})")
    if isinstance(value, pa.Table):
        return value.select(list(columns)), list(range(value.num_rows))
    labels = dict(zip(names, value.columns))
    out = {}
    for name in columns:
        one = value[[labels[name]]]
        try:  # one column at a time, as a whole frame converts it: the culprit is named
            out[name] = pa.Table.from_pandas(one, preserve_index=False).column(0)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            dtype = one.dtypes.iloc[0]
            reason = str(exc.args[0]) if exc.args else type(exc).__name__
            if getattr(dtype, "kind", "") == "c":  # Arrow's words: "Unsupported numpy type 15"
                reason = "complex numbers, not real ones"
            raise InputError(
                source, f"column {name!r} ({dtype}) cannot be read: {reason}"
            ) from None
    return pa.table(out), list(value.index)


def _ids(column: pa.Array, name: str, source: str) -> pa.Array:
    """Ids as Spark casts a Parquet column: text as it is, integers as their digits."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column.cast(pa.string())
    if pa.types.is_integer(column.type) or pa.types.is_null(column.type):
        return column.cast(pa.string())
    raise InputError(source, f"column {name!r} holds {column.type}, not ids (text or integers)")


def ground_truth(value: Any, fmt: str, engine: Engine) -> GroundTruth:
    """The ground truth of a call, checked with the command line's rules and words: a
    path read as the command reads it (through Spark on the Spark engine), a table row
    by row (an empty or missing reference_id marks a distractor query)."""
    from disc21spark import resolve
    from disc21spark.core import fs
    from disc21spark.matching.ground_truth import load_ground_truth

    source = label("ground_truth", value)
    if kind(value) == PATH:  # resolved once, here at the call's entry
        truth = resolve.resolve(os.fspath(value), fmt)
        return load_ground_truth(fs.files_of(engine.name, engine.spark), truth)
    if kind(value) == SPARK:
        rows = value.select("query_id", "reference_id").collect() if _has_ids(value) else None
        if rows is None:
            raise InputError(source, f"missing column (has: {column_list(value.columns)})")
        records = [Row(f"row {i}", tuple(_text(v) for v in r)) for i, r in enumerate(rows, 1)]
        return parse_ground_truth(records, source)
    table, index = arrow_table(value, source, ("query_id", "reference_id"))
    columns = [table.column(c).to_pylist() for c in ("query_id", "reference_id")]
    records = [Row(f"row {i}", fields) for i, fields in zip(index, zip(*columns))]
    return parse_ground_truth(records, source)


def _has_ids(frame: Any) -> bool:
    return {"query_id", "reference_id"} <= set(frame.columns)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def request(command: str, **given: Any) -> Any:
    """The typed request of ``command`` (its ``REQUEST``: ``commands.requests``,
    ``commands.evaluate_request``) of the API's keywords, by their option names, over
    defaults.ini's values; checked in the command line's words (InputError; OutputError
    for an output over an input or a frozen board). TypeError for a keyword no option
    of the command has."""
    from disc21spark.commands import COMMANDS
    from disc21spark.commands.requests import UsageError, checked

    cls = COMMANDS[command].REQUEST
    options = {f.name for f in dataclasses.fields(cls)} - {"given", "track"}  # set here
    unknown = sorted(set(given) - options)
    if unknown:
        raise TypeError(f"unknown option {unknown[0]!r} of {command}")
    explicit = frozenset(k for k, v in given.items() if v is not None)
    try:
        return checked(cls(**given, given=explicit))
    except UsageError as exc:
        raise InputError("", str(exc)) from None


def spark_session(engine: Any, inputs: list[Any]) -> Any:
    """The session of the Spark engine: the caller's (a SparkSession given as ``engine``,
    or the one a Spark DataFrame lives in), the active one, else one started from the
    local profile (left running for the next call, as ``getOrCreate`` does)."""
    if type(engine).__name__ == "SparkSession":
        return engine
    for value in inputs:
        if kind(value) == SPARK:
            return value.sparkSession
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from disc21spark.core.session import spark_session as start

    return start("local")


_INPUT_KINDS = {PATH: "path", ARROW: "arrow", SPARK: "spark-dataframe"}


def choose_engine(
    engine: Any,
    inputs: list[Any],
    formats: list[str],
    local_max_bytes: int | None,
    side: tuple[str | None, ...] = (),
) -> Engine:
    """The engine that scores ``inputs`` (with their ``formats``), by the command line's
    rule (``disc21spark.engine.choose``, asked once per input): a Spark DataFrame, a
    remote path, a glob, a folder or a file larger than ``local_max_bytes`` → Spark;
    pandas, Arrow and local files that fit → this process. ``engine`` "local" or "spark"
    forces (InputError when local cannot read an input); a SparkSession means Spark in
    that session. ``side``: the other files read (groups, split): one named by a URI
    needs Spark's file systems."""
    from disc21spark import engine as engines

    if type(engine).__name__ == "SparkSession":
        return Engine("spark", engine, engines.Choice("spark", "auto", "spark", local_max_bytes))
    _named(engine)
    for value in inputs:
        check_exists(value)
    on_spark = None
    asked = {"engine": engine, "local_max_bytes": local_max_bytes, "pool": False, "side": side}
    for value, fmt in zip(inputs, formats):
        input_kind = _INPUT_KINDS[kind(value)]
        paths = (os.fspath(value),) if input_kind == "path" else ()
        choice = _chosen(paths, predictions_format=fmt, input_kind=input_kind, **asked)
        on_spark = on_spark or (choice if choice.needs_spark else None)
    if on_spark is None:
        return Engine("local", choice=engines.LOCAL)
    return Engine("spark", spark_session(engine, inputs), on_spark)


def pool_engine(engine: Any, request: Any) -> Any:
    """The command line's decision for a pool of files (``request``: the command's typed
    request) when it is this machine's worker processes, no JVM (local files the
    in-process engine reads as Spark does); None when the pool goes to Spark (a
    SparkSession, ``engine="spark"``, a remote path, a file past ``local_max_bytes``,
    one file alone, a main script the workers cannot import), whose plan the pool job
    settles. InputError when ``engine="local"`` cannot score it."""
    if type(engine).__name__ == "SparkSession":
        return None
    _named(engine)  # a name no engine has is refused, wherever the pool would go
    if not _importable_main():
        if engine == "local":
            raise InputError(
                "engine='local'",
                "a pool's worker processes import the main script, and one read from "
                "standard input cannot be: run it from a file, or use engine='spark'",
            )
        return None
    r = request
    choice = _chosen(
        r.predictions,
        ground_truth=r.ground_truth,
        engine=engine,
        plan=r.pool_plan,
        local_max_bytes=r.local_max_bytes,
        submission_column=r.submission_column,
        predictions_format=r.predictions_format,
        side=(r.query_groups, r.private_queries),
    )
    # one file is not a pool to the decision (it scores it as one submission): the pool
    # job lists it on Spark, as before
    return None if choice.needs_spark or choice.kind != "pool" else choice


def _importable_main() -> bool:
    """Whether worker processes can import this process's main script first, as a fork
    server's do: not a script read from standard input (``python - < script.py``, whose
    ``__file__`` is ``<stdin>``); a notebook or ``python -c`` has none to import."""
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    return path is None or os.path.isfile(path)


def _chosen(paths: Any, **asked: Any) -> Any:
    """``disc21spark.engine.choose``: this module's one question to the decision."""
    from disc21spark import engine as engines

    return engines.choose(paths, **asked)


def _named(engine: Any) -> str:
    """``engine`` as one of the decision's names; InputError for anything else."""
    from disc21spark import engine as engines

    if engine not in engines.ENGINES:
        raise InputError("", f"engine={engine!r}: give 'auto', 'local', 'spark' or a SparkSession")
    return engine


def check_exists(value: Any) -> None:
    """A plain local path (no scheme, no glob) that is not there: said at once, in the
    words Spark's listing would use, rather than after starting Spark to find out."""
    if kind(value) != PATH:
        return
    path = os.fspath(value)
    if is_plain(path) and not os.path.exists(path):
        raise InputError(path, "no such file or directory")


def rows_of_queries(table: Any, ids: list[str]) -> Any:
    """The rows of a table (pandas, Arrow, Spark) whose query id, as text, is in ``ids``."""
    if kind(table) == SPARK:
        from pyspark.sql import functions as F

        return table.where(F.col("query_id").cast("string").isin(ids))
    if hasattr(table, "to_pylist"):
        import pyarrow.compute as pc

        column = pc.cast(table["query_id"], pa.string())
        return table.filter(pc.is_in(column, value_set=pa.array(ids, pa.string())))
    return table[table["query_id"].astype(str).isin(ids)]
