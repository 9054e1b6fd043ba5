"""What the descriptor job's stages hand on: the search's outcome, then the scores."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame

from disc21spark.descriptors.budgets.table import BudgetTable
from disc21spark.matching.model import MatchingMetrics


@dataclass(frozen=True)
class Scores:
    """The figures of the job's own budget, and the budgets table when asked for."""

    metrics: MatchingMetrics
    budgets: BudgetTable | None = None


@dataclass
class SearchOutcome:
    pairs: DataFrame  # query_id, reference_id, score: the job's own budget
    n_queries: int
    n_references: int
    dim: int
    shards: int
    broadcast_bytes: int  # 0 when the index travels as files
    transport: str  # "files" or "broadcast"
    cached: list = field(default_factory=list)
    folder: Path | None = None  # the job's index folder on the driver
    # every pair searched (query_id, reference_id, rrank, score), cut to each budget
    searched: DataFrame | None = None
    n_searched: int | None = None  # rows of ``searched`` (None: not counted)

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
