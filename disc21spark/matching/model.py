"""Plain data types shared by every stage (read → validate → label → score → report); the
options scoring is given are ``scoring_job.ScoringJob`` (a job of the runner)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from disc21spark.matching.stats.model import Resampling


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
    """Points of the precision/recall curve, in the scorer's sorted order (as
    pr_curve.csv holds them): three float64 arrays of one length."""

    precision: np.ndarray
    recall: np.ndarray
    threshold: np.ndarray

    def __len__(self) -> int:
        return len(self.precision)

    def to_pandas(self) -> pd.DataFrame:
        """The points as a pandas DataFrame: columns precision, recall, threshold (float64)."""
        import pandas as pd

        return pd.DataFrame(
            {"precision": self.precision, "recall": self.recall, "threshold": self.threshold}
        )


# the fields of MatchingMetrics that are not figures of metrics.json (written apart)
ATTACHED = ("curve", "warnings", "uncertainty", "groups", "queries")


@dataclass(frozen=True)
class MatchingMetrics:
    """Every figure of metrics.json; all exact, whatever the size of the input.

    Attributes
    ----------
    micro_ap : float
        Micro average precision over all pairs of all queries (pessimistic ties).
    recall_at_p90, threshold_at_p90, precision_at_p90 : float or None
        The operating point of highest recall at precision ≥ 0.9 (None: never reached).
    recall_at_rank1, recall_at_rank10 : float
        Share of the positive pairs found at rank ≤ 1 (≤ 10) of their query.
    n_predictions, n_positives, n_true_positives, n_queries,
    n_queries_with_predictions, n_unknown_query_predictions : int
        The counts of metrics.json.
    curve : PRCurve
        The precision/recall points (``pr_curve`` gives them as a pandas DataFrame).
    warnings : tuple of str
        Signs of misnamed ids (never a figure; see matching/coverage.py).
    """

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
    # the figures by query group (stats/groups_table.GroupTable), with --query-groups
    groups: Any = field(default=None, compare=False, repr=False)
    # one row per query (matching/per_query.py: a pandas DataFrame), with --per-query
    queries: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        """The figures of metrics.json, by name (the curve, the warnings and the
        uncertainty are written on their own: pr_curve.csv, metrics.json's ``warnings``,
        ``micro_ap_optimistic`` and ``bootstrap``; the per-query table in queries.csv)."""
        out = asdict(replace(self, uncertainty=None, groups=None, queries=None))
        for key in ATTACHED:
            out.pop(key)
        return out

    @property
    def pr_curve(self) -> pd.DataFrame:
        """The precision/recall curve as pr_curve.csv holds it: a pandas DataFrame with
        float64 columns precision, recall, threshold, one row per point."""
        return self.curve.to_pandas()

    def by_group(self) -> pd.DataFrame | None:
        """The figures by query group as groups.csv holds them: a pandas DataFrame, one
        row per group (stats/groups_table.COLUMNS); None without query groups."""
        return None if self.groups is None else self.groups.to_pandas()

    def plot(self, title: str = "DISC21 matching track", label: str = "submission") -> Figure:
        """The PR curve as pr_curve.png draws it: a new matplotlib Figure (matplotlib is
        imported here only)."""
        from disc21spark.matching.reports.curve_figure import curves_figure

        return curves_figure([(label, self)], title)


@dataclass(frozen=True)
class Settings:
    """How a submission is scored, built once a run (``ScoringJob.settings``) and handed
    to every stage whole: ``max_results`` (0: no limit), ``curve_points``, the bootstrap
    (``resampling``; None: no intervals), ``per_query`` (the per-query table), and
    ``batch_bytes``, the batch the in-process engine reads a file in (None:
    ``core.memory.BATCH_BYTES``; ``engine.choose`` sizes it), and ``drawn``, the
    resampling's keys and weights for the ground truth scored on
    (``stats.weighted.Drawn``), drawn once for a pool's files or a Spark job's tasks
    (None: drawn where the file is scored)."""

    max_results: int
    curve_points: int
    resampling: Resampling | None = None
    per_query: bool = False
    batch_bytes: int | None = None
    drawn: Any = field(default=None, compare=False, repr=False)


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
