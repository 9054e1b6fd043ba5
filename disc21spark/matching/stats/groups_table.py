"""One submission's figures by query group: plain data, and its forms (metrics.json's
``groups`` block, groups.csv, a pandas DataFrame, the terminal lines)."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from disc21spark.matching.stats.model import STATISTICS, Resampling, percentile_interval

if TYPE_CHECKING:
    import pandas as pd

RULE = "each group's queries together with every query in no group (distractors included)"
COLUMNS = [
    "group",
    "n_queries",
    "n_positives",
    "n_predictions",
    *STATISTICS,
    *(f"{name}_{end}" for name in STATISTICS for end in ("low", "high")),
]


@dataclass(frozen=True)
class GroupResult:
    """One group: its size, the positives and predictions its figures count, the figures
    (model.STATISTICS, None where undefined) and their intervals (None without resamples)."""

    group: str
    n_queries: int  # queries of the group (those of no group come on top)
    n_positives: int
    n_predictions: int
    figures: dict[str, float | None]
    intervals: dict[str, tuple[float, float] | None]

    @classmethod
    def of(
        cls,
        name: str,
        sizes: tuple[int, int, int],
        figures: dict,
        replicates: dict[str, np.ndarray],
        r: Resampling,
    ) -> GroupResult:
        """``sizes``: (n_queries, n_positives, n_predictions); the intervals from the
        ``replicates`` (float64 (B,) per statistic) at ``r.confidence``."""
        intervals = {k: percentile_interval(replicates.get(k), r.confidence) for k in STATISTICS}
        return cls(name, *sizes, figures, intervals)

    def row(self) -> dict:
        """A groups.csv / leaderboard row: COLUMNS, None for no value."""
        out: dict = {
            "group": self.group,
            "n_queries": self.n_queries,
            "n_positives": self.n_positives,
            "n_predictions": self.n_predictions,
        }
        out.update({k: self.figures.get(k) for k in STATISTICS})
        for k in STATISTICS:
            low, high = self.intervals.get(k) or (None, None)
            out[f"{k}_low"], out[f"{k}_high"] = _finite(low), _finite(high)
        return out

    @classmethod
    def from_row(cls, row: dict) -> GroupResult:
        """The inverse of ``row`` (a previous leaderboard.json's record)."""
        intervals = {}
        for k in STATISTICS:
            low, high = row.get(f"{k}_low"), row.get(f"{k}_high")
            intervals[k] = None if low is None else (low, high)
        counts = [int(row[k]) for k in ("n_queries", "n_positives", "n_predictions")]
        return cls(str(row["group"]), *counts, {k: row.get(k) for k in STATISTICS}, intervals)


@dataclass(frozen=True)
class GroupTable:
    """Every group of one submission, in the groups' name order."""

    source: str  # the groups file
    ungrouped_queries: int  # ground-truth queries in no group
    groups: tuple[GroupResult, ...]
    resampling: Resampling

    def to_pandas(self) -> pd.DataFrame:
        """One row per group, columns COLUMNS (figures float64, NaN for no value)."""
        import pandas as pd

        return pd.DataFrame([g.row() for g in self.groups], columns=COLUMNS)

    def to_dict(self) -> dict:
        """metrics.json's ``groups`` block."""
        return {
            "file": self.source,
            "rule": RULE,
            "ungrouped_queries": self.ungrouped_queries,
            "confidence": self.resampling.confidence if self.resampling.resamples else None,
            "groups": [g.row() for g in self.groups],
        }

    @classmethod
    def from_dict(cls, doc: dict, r: Resampling) -> GroupTable:
        rows = tuple(GroupResult.from_row(g) for g in doc["groups"])
        return cls(doc["file"], int(doc["ungrouped_queries"]), rows, r)

    def write_csv(self, path: Path) -> None:
        """groups.csv: COLUMNS, figures written with every digit (repr), empty for none."""
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(COLUMNS)
            for g in self.groups:
                row = g.row()
                writer.writerow(["" if row[c] is None else _text(row[c]) for c in COLUMNS])

    def lines(self) -> list[str]:
        """The terminal table's lines: one per group."""
        out = [
            f"by query group ({self.source}; each with the {self.ungrouped_queries:,} "
            "queries in no group):"
        ]
        width = max(len(g.group) for g in self.groups) if self.groups else 5
        for g in self.groups:
            ap = g.figures.get("micro_ap")
            text = "no positive" if ap is None else f"μAP {ap:.6f}"
            span = g.intervals.get("micro_ap")
            if span is not None:
                text += f" [{span[0]:.4f}, {span[1]:.4f}]"
            out.append(f"  {g.group:<{width}}  {g.n_queries:>7,} queries  {text}")
        return out


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def _text(value: object) -> str:
    return repr(value) if isinstance(value, float) else str(value)
