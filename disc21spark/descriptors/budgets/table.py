"""The budgets table: one row per budget with every figure of metrics.json, as
budgets.csv, the ``budgets`` block of metrics.json, a pandas DataFrame and budgets.png
(μAP and the recalls against the budget, drawn with matplotlib)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from disc21spark.descriptors.budgets.spec import Budgets
from disc21spark.matching.model import MatchingMetrics

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# how each kind's budgets are counted, and the tie rule at a cut (docs/descriptors.md)
UNITS = {
    "max_results": "pairs over all queries (--budgets)",
    "knn": "references per query (--knn-budgets)",
}
TIES = {
    "max_results": "exactly N pairs: score descending, then query id, then reference id",
    "knn": "exactly k pairs per query: score descending, then reference id",
}
PLOTTED = (
    ("micro_ap", "μAP", "o-"),
    ("recall_at_p90", "recall at precision 0.9", "s-"),
    ("recall_at_rank1", "recall at rank 1", "^--"),
    ("recall_at_rank10", "recall at rank 10", "v--"),
)


@dataclass(frozen=True)
class BudgetTable:
    """The metrics of each budget of ``budgets.values`` (rows in that order)."""

    budgets: Budgets
    rows: tuple[MatchingMetrics, ...]

    def records(self) -> list[dict]:
        """One dict per budget: ``budget`` then every figure of ``MatchingMetrics.to_dict``."""
        return [{"budget": b, **m.to_dict()} for b, m in zip(self.budgets.values, self.rows)]

    def to_pandas(self) -> pd.DataFrame:
        """The table as budgets.csv holds it: ``budget`` (int64) then the figures (float64;
        NaN where precision 0.9 is never reached) and the counts (int64)."""
        import pandas as pd

        return pd.DataFrame(self.records()).astype(
            {k: "float64" for k in ("recall_at_p90", "threshold_at_p90", "precision_at_p90")}
        )

    def to_dict(self) -> dict:
        """The ``budgets`` block of metrics.json."""
        return {
            "kind": self.budgets.kind,
            "unit": UNITS[self.budgets.kind],
            "searched": self.budgets.search,
            "ties": TIES[self.budgets.kind],
            "rows": self.records(),
        }

    def write_csv(self, path: Path) -> None:
        """Every digit of the figures (they read back to the same floats); empty: None."""
        records = self.records()
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(list(records[0]))
            for row in records:
                writer.writerow(["" if v is None else repr(v) for v in row.values()])

    def lines(self) -> list[str]:
        """The table for the terminal."""
        head = f"{'budget':>10}  {'μAP':>8}  {'R@P90':>8}  {'R@1':>8}  {'R@10':>8}  {'pairs':>12}"
        out = [f"candidate budgets: {UNITS[self.budgets.kind]}", head]
        for b, m in zip(self.budgets.values, self.rows):
            r90 = "-" if m.recall_at_p90 is None else f"{m.recall_at_p90:.6f}"
            out.append(
                f"{b:>10,}  {m.micro_ap:>8.6f}  {r90:>8}  {m.recall_at_rank1:>8.6f}  "
                f"{m.recall_at_rank10:>8.6f}  {m.n_predictions:>12,}"
            )
        return out

    def figure(self, title: str = "DISC21 descriptor track") -> Figure:
        """μAP and the recalls against the budget (a log axis when budgets span ×10 or
        more): a new matplotlib Figure, rendered with Agg by ``savefig``."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7, 4.5), dpi=110)
        ax = fig.subplots()
        x = list(self.budgets.values)
        for key, label, style in PLOTTED:
            y = [getattr(m, key) for m in self.rows]
            ax.plot(x, [float("nan") if v is None else v for v in y], style, ms=4, label=label)
        if x[-1] >= 10 * x[0]:
            ax.set_xscale("log")
        ax.set_xticks(x, [f"{b:,}" for b in x], rotation=30 if len(x) > 4 else 0)
        ax.minorticks_off()
        ax.set(xlabel=f"budget: {UNITS[self.budgets.kind]}", ylim=(0, 1.02), title=title)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        return fig

    def write_plot(self, path: Path, title: str) -> None:
        self.figure(title).savefig(path)
