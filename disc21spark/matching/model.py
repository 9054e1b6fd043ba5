"""Plain data types shared by every stage (read → validate → label → score → report)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np


@dataclass(frozen=True)
class GroundTruth:
    """DISC21 ground truth: every query (distractors included) and the positive pairs."""

    source: str
    query_ids: np.ndarray  # every query of the benchmark, distractors included
    positive_queries: np.ndarray  # positive pairs, column 1
    positive_references: np.ndarray  # positive pairs, column 2

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def n_positives(self) -> int:
        return len(self.positive_queries)


@dataclass(frozen=True)
class PRCurve:
    """Points of the precision/recall curve, in the scorer's sorted order."""

    precision: np.ndarray
    recall: np.ndarray
    threshold: np.ndarray

    def __len__(self) -> int:
        return len(self.precision)


@dataclass(frozen=True)
class MatchingMetrics:
    """Every figure of metrics.json; all exact, whatever the size of the input."""

    micro_ap: float
    recall_at_p90: float | None
    threshold_at_p90: float | None
    precision_at_p90: float | None
    recall_at_rank1: float
    recall_at_rank10: float
    n_predictions: int
    n_positives: int
    n_true_positives: int
    n_queries: int
    n_queries_with_predictions: int
    n_unknown_query_predictions: int
    curve: PRCurve = field(repr=False, compare=False)
    # signs of a misnamed submission (matching/coverage.py): advice, never a figure
    warnings: tuple[str, ...] = field(default=(), compare=False)
    # intervals and tie sensitivity (stats/model.Uncertainty), when computed
    uncertainty: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        """The figures (the curve, the warnings and the uncertainty are written on their own)."""
        out = asdict(replace(self, uncertainty=None))
        for key in ("curve", "warnings", "uncertainty"):
            out.pop(key)
        return out


@dataclass
class Submission:
    """One submission of a pool: its identity, status and (when scored) metrics."""

    name: str
    source: str  # the file, or "table:<name>"
    checksum: str = ""
    status: str = "ok"
    reason: str | None = None
    metrics: MatchingMetrics | None = None
    reused: bool = False

    def invalid(self, error: Exception | str) -> None:
        self.status, self.reason, self.metrics = "invalid", str(error), None
