"""rank_eval by query group: each method's kNN pairs scored as one submission over the
whole bench, broken down by the bench's query_groups.csv (the test of each query written
by make_queries, distractors in no group), as ``evaluate --query-groups`` breaks a
submission down: each test's μAP over its queries and every distractor, with intervals."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from disc21spark.core.phases import Phases
from disc21spark.matching.kernel import DEFAULT_CURVE_POINTS
from disc21spark.matching.model import GroundTruth
from disc21spark.matching.spark.score import Scoring, score
from disc21spark.matching.stats.groups_file import read_query_groups
from disc21spark.matching.stats.groups_table import COLUMNS
from disc21spark.matching.stats.model import Resampling
from disc21spark.queries.bench_folder import QUERY_GROUPS


def by_group(
    spark: SparkSession,
    pairs: DataFrame,
    n_tests: int,
    methods: list[str],
    gt: GroundTruth,
    folder: Path,
    r: Resampling,
    phases: Phases,
) -> pd.DataFrame | None:
    """method, then groups_table.COLUMNS: one row per (method, group); None for a bench
    folder written before make_queries wrote query_groups.csv. ``pairs``: every method's
    kNN pairs, submission = method index × n_tests + test index."""
    path = folder / QUERY_GROUPS
    if not path.is_file():
        return None
    groups = read_query_groups(str(path), gt)
    method = (F.col("submission") / F.lit(n_tests)).cast("int")
    whole = pairs.withColumn("submission", method)
    scoring = Scoring(
        gt,
        DEFAULT_CURVE_POINTS,
        read_detail="every method's kNN pairs, by group",
        resampling=Resampling(r.resamples, r.confidence, r.seed, groups),
    )
    with phases.phase("by group") as note:
        metrics = score(spark, whole, range(len(methods)), scoring).metrics
        note.update(
            rows=sum(m.n_predictions for m in metrics.values()),
            detail=f"{len(groups.names)} groups, {r.resamples:,} resamples",
        )
    frames = [metrics[i].groups.to_pandas().assign(method=name) for i, name in enumerate(methods)]
    table = pd.concat(frames, ignore_index=True)
    return table[["method", *COLUMNS]]


def lines(table: pd.DataFrame) -> list[str]:
    """The terminal table's lines: μAP by group, per method."""
    out = ["μAP by test (query_groups.csv: each test's queries with every distractor):"]
    for row in table.itertuples():
        ap = "–" if pd.isna(row.micro_ap) else f"{row.micro_ap:.4f}"
        span = (
            ""
            if pd.isna(row.micro_ap_low)
            else f" [{row.micro_ap_low:.4f}, {row.micro_ap_high:.4f}]"
        )
        out.append(f"  {row.method:<14} {row.group:<22} {ap}{span}")
    return out
