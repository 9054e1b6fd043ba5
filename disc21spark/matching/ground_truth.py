"""The ground truth of a run: read on the driver and validated before any heavy work."""

from __future__ import annotations

from typing import TYPE_CHECKING

from disc21spark.core.errors import InputError, first_line
from disc21spark.core.phases import Phases
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.rows import GROUND_TRUTH_COLUMNS, Row, parse_csv_line, parse_ground_truth

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def load_ground_truth(spark: SparkSession | None, path: str, fmt: str = "auto") -> GroundTruth:
    """Read through Spark (any Hadoop path); without a session (the in-process engine),
    from a local file with the same rules."""
    if spark is None:
        return parse_ground_truth(_local_rows(path, fmt), path)
    # here, not above: the in-process engine never pays for importing PySpark
    from disc21spark.matching.read import read_small_table

    return parse_ground_truth(read_small_table(spark, path, GROUND_TRUTH_COLUMNS, fmt), path)


def ground_truth_phase(
    spark: SparkSession | None, path: str, fmt: str, phases: Phases
) -> GroundTruth:
    """The ground truth, read first so that a bad file fails before any heavy work."""
    with phases.phase("ground truth") as note:
        gt = load_ground_truth(spark, path, fmt)
        note["rows"] = gt.n_queries
        note["detail"] = f"{gt.n_positives:,} positive pairs"
    return gt


def _local_rows(path: str, fmt: str) -> list[Row]:
    """Records of a local CSV (plain, .gz or .bz2) or Parquet file, with their lines."""
    from disc21spark.matching.local import file_format, local_path, open_text

    plain = local_path(path)
    if plain is None:
        raise InputError(path, "no such file or directory")
    try:
        if file_format(plain, fmt) == "parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(plain)
            missing = [c for c in GROUND_TRUTH_COLUMNS if c not in table.column_names]
            if missing:
                has = ", ".join(table.column_names)
                raise InputError(path, f"missing column {missing[0]!r} (has: {has})")
            columns = [table.column(c).cast("string").to_pylist() for c in GROUND_TRUTH_COLUMNS]
            return [Row(f"row {i}", fields) for i, fields in enumerate(zip(*columns), start=1)]
        with open_text(plain) as fh:
            lines = fh.read().splitlines()
    except InputError:
        raise
    except Exception as exc:  # unreadable: the user's file, in one line
        raise InputError(path, f"cannot be read ({first_line(exc)})") from None
    return [Row(f"line {i}", parse_csv_line(line)) for i, line in enumerate(lines, 1) if line.strip()]
