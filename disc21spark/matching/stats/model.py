"""The bootstrap's settings and one submission's result: plain data, shared by every engine."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from disc21spark.core import config

# the figures that get an interval, as named in metrics.json
STATISTICS = ("micro_ap", "recall_at_p90", "recall_at_rank1", "recall_at_rank10")


@dataclass(frozen=True)
class Resampling:
    """How the intervals are drawn; defaults from conf/defaults.ini [evaluate]."""

    resamples: int = config.value("evaluate", "resamples", int)  # 0: no interval
    confidence: float = config.value("evaluate", "confidence", float)
    seed: int = config.value("evaluate", "seed", int)
    # the query groups (groups_file.QueryGroups) broken down with the same resamples;
    # None: no breakdown
    groups: Any = field(default=None, compare=False, repr=False)

    def settings(self) -> dict:
        """What a previous leaderboard must share for its intervals to be reused."""
        return {"resamples": self.resamples, "confidence": self.confidence, "seed": self.seed}


@dataclass(frozen=True)
class Uncertainty:
    """One submission's replicates and its tie sensitivity."""

    resampling: Resampling
    replicates: dict[str, np.ndarray] = field(repr=False)  # statistic -> float64 (B,)
    micro_ap_optimistic: float  # ties broken with the true pairs first

    def interval(self, name: str) -> tuple[float, float] | None:
        """The percentile interval of a statistic at the confidence level; None without
        resamples (or when no resample drew a positive)."""
        return percentile_interval(self.replicates.get(name), self.resampling.confidence)

    def standard_error(self, name: str) -> float | None:
        values = self.replicates.get(name)
        if values is None or np.isfinite(values).sum() < 2:
            return None
        return float(np.nanstd(values, ddof=1))

    def to_dict(self) -> dict:
        """metrics.json's part: the optimistic μAP, then the bootstrap (null when off)."""
        doc: dict = {"micro_ap_optimistic": self.micro_ap_optimistic, "bootstrap": None}
        if self.replicates:
            doc["bootstrap"] = {
                **self.resampling.settings(),
                "method": "percentile, Poisson(1) weights per ground-truth query",
                "resamples_without_positives": int(np.isnan(self.replicates["micro_ap"]).sum()),
                "intervals": {name: _pair(self.interval(name)) for name in STATISTICS},
                "standard_errors": {name: self.standard_error(name) for name in STATISTICS},
            }
        return doc


def percentile_interval(values: np.ndarray | None, confidence: float) -> tuple[float, float] | None:
    """The percentile interval of float64 replicates (B,) at ``confidence``, NaN left out;
    None without replicates or when none is finite."""
    if values is None or not np.isfinite(values).any():
        return None
    tail = (1.0 - confidence) / 2
    low, high = np.nanquantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def _pair(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [x if math.isfinite(x) else None for x in interval]
