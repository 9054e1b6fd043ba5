"""Reading predictions and the ground truth from any path Spark reads (local, hdfs://,
s3a://...): nothing is checked here."""

from __future__ import annotations

from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core import damage
from disc21spark.core.errors import InputError, column_list, first_line
from disc21spark.core.fs import data_files
from disc21spark.core.paths import codec, display_path
from disc21spark.core.spark import sql_text
from disc21spark.matching.rows import (
    PREDICTION_COLUMNS,
    WHITESPACE,
    Row,
    parse_csv_line,
)


def read_predictions(
    spark: SparkSession,
    path: str | list[str],
    fmt: str,
    keep: tuple[str, ...] = (),
    listed: bool = False,
) -> DataFrame:
    """Raw predictions: file, order, from_csv, query_id, reference_id, score_raw (text or
    null), score, extra. ``order`` grows with the rows of a file split (Spark's
    ``monotonically_increasing_id``): the earliest bad row is the one of least order.

    CSV (any Hadoop codec, header line optional): a line is stripped and split on commas,
    as the official reader does; ``score`` is null and ``extra`` holds a fourth field when
    a line has too many. For Parquet, ``score_raw`` and ``extra`` are null. Several paths
    are read as one frame (``file`` tells them apart); ``keep``: more Parquet columns;
    ``fmt``: csv or parquet, as the decision resolved it (``resolve.py``). Each path is
    first listed (an InputError naming a path without a data file) unless ``listed``:
    the run's decision listed it (``engine.Choice.listed``), and a Hadoop listing costs
    py4j calls a file. Then a file gone since is listed after Spark finds it missing.
    """
    paths = [path] if isinstance(path, str) else list(path)
    if not listed:
        for p in paths:
            data_files(spark, p)
    try:
        return _read(spark, paths, fmt, keep)
    except AnalysisException as exc:
        _name_the_missing_path(spark, paths, exc)
        raise


def _name_the_missing_path(spark: SparkSession, paths: list[str], exc: BaseException) -> None:
    """When Spark found one of ``paths`` missing (``PATH_NOT_FOUND``: gone since it was
    listed), the InputError its listing gives, naming it; else nothing."""
    if isinstance(exc, AnalysisException) and exc.getCondition() == "PATH_NOT_FOUND":
        for p in paths:
            data_files(spark, p)


def _read(spark: SparkSession, paths: list[str], fmt: str, keep: tuple[str, ...]) -> DataFrame:
    """``read_predictions`` of ``paths``, listed."""
    if fmt == "parquet":
        df = read_parquet(spark, paths, PREDICTION_COLUMNS + keep)
        return typed_table(df, F.col("_metadata.file_path"), keep)
    # the official reader's rule: strip the line, split on commas (no quoting); a plain
    # text scan with split is also ~40% faster here than Spark's CSV parser. SQL text,
    # parsed by Spark in one call (issue 47)
    strip = f"BOTH {sql_text(WHITESPACE)} FROM"
    # a line without any of the stripped characters, nor its fields, has nothing to
    # strip: it is split as it is. Spark's trim of a set of characters allocates two
    # arrays of the string's length a call, and stripping every line and field took a
    # third of the read's time at 20M rows (docs/design.md, "Cost model")
    spaced = " OR ".join(f"contains(value, {sql_text(c)})" for c in WHITESPACE)
    lines = spark.read.text(paths).selectExpr(
        "_metadata.file_path AS file",
        f"{spaced} AS spaced",
        f"split(CASE WHEN {spaced} THEN trim({strip} value) ELSE value END, ',', -1) AS fields",
        # nondeterministic, so no filter is pushed below this projection: each line is
        # split once (a filter pushed down would split it again for every field it reads)
        "monotonically_increasing_id() AS `order`",  # ORDER: reserved in ANSI SQL
    )

    def field(i: int) -> str:
        at = f"get(fields, {i})"
        return f"nullif(CASE WHEN spaced THEN trim({strip} {at}) ELSE {at} END, '')"

    return lines.where("size(fields) > 1 OR get(fields, 0) != ''").selectExpr(
        "file",
        "`order`",
        "true AS from_csv",
        f"{field(0)} AS query_id",
        f"{field(1)} AS reference_id",
        f"{field(2)} AS score_raw",
        "CAST(NULL AS DOUBLE) AS score",
        "CASE WHEN size(fields) > 3 THEN get(fields, 3) END AS extra",
    )


def read_parquet(spark: SparkSession, path: str | list[str], columns: tuple[str, ...]) -> DataFrame:
    """Parquet files or folders holding (at least) the given columns. Raises InputError
    naming them: a damaged file in ``core/damage.py``'s words (the in-process engine's
    too), a missing column with the columns there are."""
    paths = [path] if isinstance(path, str) else list(path)
    name = ", ".join(paths)
    try:
        df = spark.read.parquet(*paths)
    except Exception as exc:  # not there (gone since listed), not Parquet, a damaged footer
        _name_the_missing_path(spark, paths, exc)
        reason = damage.unreadable(paths[0], exc, "parquet", spark) if len(paths) == 1 else None
        raise InputError(name, reason or f"cannot be read ({first_line(exc)})") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(name, f"missing column {missing[0]!r} (has: {column_list(df.columns)})")
    return df


def typed_table(df: DataFrame, file: Column, keep: tuple[str, ...] = ()) -> DataFrame:
    """A table of typed columns (Parquet, or a caller's DataFrame) as raw predictions:
    ids cast to strings, the score to a double (null when it is no number); ``file``
    names the rows' source in messages."""
    return df.select(
        *keep,
        file.alias("file"),
        F.monotonically_increasing_id().alias("order"),
        F.lit(False).alias("from_csv"),
        F.col("query_id").cast("string").alias("query_id"),
        F.col("reference_id").cast("string").alias("reference_id"),
        F.lit(None).cast("string").alias("score_raw"),
        F.col("score").try_cast("double").alias("score"),
        F.lit(None).cast("string").alias("extra"),
    )


def spark_table_rows(spark: SparkSession, gt: Any, columns: tuple[str, ...]) -> list[Row]:
    """A small file (the ground truth, a ``resolve.ResolvedInput``: its path as given and
    its format as resolved) collected to the driver in file order, with line numbers."""
    path, fmt = gt.given, gt.format
    files = data_files(spark, path)
    rows: list[Row] = []
    try:
        if fmt == "parquet":
            df = read_parquet(spark, path, columns)
            table = df.select(*[F.col(c).cast("string") for c in columns]).collect()
            for i, rec in enumerate(table, start=1):
                rows.append(Row(f"row {i}", tuple(rec)))
            return rows
        for file in files:
            lines = _small_text(spark, file)
            prefix = f"{file.rsplit('/', 1)[-1]} line" if len(files) > 1 else "line"
            for i, line in enumerate(lines, start=1):
                if line.strip():
                    rows.append(Row(f"{prefix} {i}", parse_csv_line(line)))
    except InputError:
        raise
    except Exception as exc:
        raise InputError(path, damage.unreadable(path, exc, fmt, spark)) from None
    return rows


def _small_text(spark: SparkSession, file: str) -> list[str]:
    """Lines of a small text file: directly when local, else through Spark (any codec)."""
    local = display_path(file)
    # a folder's parts are listed here, as Spark reads them: the decision resolved the
    # folder, not each part, so a part's codec is told from its name here (issue 45)
    if local.startswith("/") and codec(local) is None:
        # as textFile reads: no byte-order mark in the first id, U+FFFD for a byte that is
        # not UTF-8 (refused by name in parse_ground_truth)
        with open(local, encoding="utf-8-sig", errors="replace", newline="") as fh:
            return fh.read().splitlines()
    # textFile keeps line order (partitions follow offsets) and reads any Hadoop codec
    return spark.sparkContext.textFile(file).collect()


def find_lines(
    spark: SparkSession, file: str, wanted: tuple[str, ...], limit: int = 2
) -> list[int]:
    """1-based numbers of the first lines of a CSV file whose leading fields equal `wanted`.

    Only used to point at a bad row in an error message, so it may scan the file.
    """
    n = len(wanted)

    def matches(item: tuple[str, int]) -> bool:
        fields = [f if f != "" else None for f in parse_csv_line(item[0])[:n]]
        return tuple(fields + [None] * (n - len(fields))) == wanted

    try:
        hits = spark.sparkContext.textFile(file).zipWithIndex().filter(matches).take(limit)
    except Exception:
        return []
    return [i + 1 for _, i in hits]
