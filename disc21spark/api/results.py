"""What the library's calls return beyond ``MatchingMetrics``: a pool's leaderboard and the
descriptor track's result."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

from disc21spark.matching.model import MatchingMetrics, Submission
from disc21spark.matching.stats import compare
from disc21spark.matching.stats.difference import SMALLEST_DIFFERENCE, is_difference
from disc21spark.pool import boards, latex
from disc21spark.pool import queries as pool_queries
from disc21spark.pool import report as pool_report

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Leaderboard:
    """A scored pool, ranked as leaderboard.csv ranks it (μAP, then recall at P90, then
    name; invalid submissions last).

    Attributes
    ----------
    submissions : list of Submission
        Every submission, in name order: ``name``, ``status`` ("ok" or "invalid"),
        ``reason`` (the one-line error of an invalid one), ``metrics``.
    private : Leaderboard or None
        With ``private_queries``: the private board (this one is the public board).
    """

    submissions: list[Submission]
    private: Leaderboard | None = None

    def rank_changes(self) -> pd.DataFrame:
        """With a private board: rank_changes.csv as a pandas DataFrame (columns
        ``boards.CHANGE_COLUMNS``, the private board's order). Raises ValueError
        without one."""
        import pandas as pd

        if self.private is None:
            raise ValueError("no private board: score the pool with private_queries")
        rows = boards.rank_changes(self.submissions, self.private.submissions)
        return pd.DataFrame(rows, columns=list(boards.CHANGE_COLUMNS))

    @property
    def table(self) -> pd.DataFrame:
        """The leaderboard as leaderboard.csv holds it: one row per submission, the
        columns ``pool.report.COLUMNS`` (rank, submission, status, reason, ..., warnings);
        rank and next_queries_needed as pandas Int64 (<NA>: an invalid submission, the last
        place), figures float64 / int64."""
        import pandas as pd

        table = pd.DataFrame(self.to_dict()["submissions"], columns=pool_report.COLUMNS)
        # whole numbers with gaps: invalid submissions have no rank, the last place no next
        return table.astype({"rank": "Int64", "next_queries_needed": "Int64"})

    def to_dict(self) -> dict:
        """What leaderboard.json holds but for its ``run``: ``{"submissions": [...]}``."""
        return {"submissions": pool_report.records(self.submissions)}

    def to_latex(self) -> str:
        """The leaderboard as a LaTeX table for a paper: the text of leaderboard.tex,
        which a pool run with an output writes beside leaderboard.csv. It needs
        ``\\usepackage{booktabs}``.

        Returns:
            str: a ``table`` float (a caption, the label ``tab:disc21-leaderboard``)
            holding a booktabs ``tabular``: rank, tier, submission (LaTeX's special
            characters escaped), μAP with its interval, the difference from the next
            place and its Holm-adjusted p-value; invalid submissions last, unranked. The
            caption states the bootstrap's resamples, confidence and seed and the
            correction. Without intervals (``resamples=0``) there are no tier, interval
            or p-value columns, and the caption says so.
        """
        rows = pool_report.records(self.submissions)
        return latex.render(rows, latex.resampling_of(self.submissions))

    def __getitem__(self, name: str) -> MatchingMetrics:
        """The metrics of the submission ``name``; KeyError if it has none (unknown or
        invalid: see ``submissions`` for why)."""
        for s in self.submissions:
            if s.name == name and s.metrics is not None:
                return s.metrics
        raise KeyError(name)

    def __len__(self) -> int:
        return len(self.submissions)

    @property
    def invalid(self) -> dict[str, str]:
        """Submission name → the reason it is invalid."""
        return {s.name: s.reason or "" for s in self.submissions if s.status != "ok"}

    def queries_needed(self, difference: float) -> pd.DataFrame:
        """How many queries a μAP difference of ``difference`` between neighbours would
        need to be detectable (80 % power at the intervals' confidence; Sakai's design on
        μAP's query resampling, docs/statistics.md): one row per place that has a next
        one, columns ``rank``, ``submission``, ``next_detectable`` (float64: the smallest
        difference these queries detect) and ``queries_needed`` (Int64: n · (δ_min /
        difference)², queries of the same kind; <NA> without intervals, and when the
        two places score the same on every resample: ``next_detectable`` is then 0, and
        no number of queries tells them apart). Raises ValueError for a difference that
        is not a real number from 0.000001 to 1 (a bool is refused)."""
        import pandas as pd

        if not is_difference(difference):
            raise ValueError(
                f"difference must be a μAP difference from {SMALLEST_DIFFERENCE:.6f} "
                f"to 1, got {difference!r}"
            )
        rows = compare.queries_needed_rows(self.to_dict()["submissions"], float(difference))
        table = pd.DataFrame(rows, columns=list(compare.NEEDED_COLUMNS))
        return table.astype(
            {"rank": "Int64", "next_detectable": "float64", "queries_needed": "Int64"}
        )

    def queries(self) -> pd.DataFrame:
        """With ``per_query=True``: every scored submission's per-query table in the
        board's order, the column ``submission`` first (queries.csv of the pool)."""
        return pool_queries.pool_table(self._with_tables())

    def missed_queries(self) -> pd.DataFrame:
        """With ``per_query=True``: the queries with a match that no scored submission
        found a true pair of (queries_missed.csv: ``pool.queries.MISSED_COLUMNS``)."""
        return pool_queries.missed(self._with_tables())

    def separating_queries(self, top: int = pool_queries.SEPARATING) -> pd.DataFrame:
        """With ``per_query=True``: for each pair of neighbours, the ``top`` queries whose
        contributions to μAP differ most (queries_separating.csv:
        ``pool.queries.SEPARATING_COLUMNS``). Raises ValueError for a ``top`` that is
        not a positive whole number (a bool is refused)."""
        if isinstance(top, bool) or not isinstance(top, numbers.Integral) or top < 1:
            raise ValueError(f"top must be a positive whole number, got {top!r}")
        return pool_queries.separating(self._with_tables(), int(top))

    def _with_tables(self) -> list[Submission]:
        """The submissions; ValueError when a scored one has no per-query table."""
        if any(s.metrics is not None and s.metrics.queries is None for s in self.submissions):
            raise ValueError("no per-query tables: score the pool with per_query=True")
        return self.submissions

    def plot(self, top: int = pool_report.TOP_PLOTTED) -> Figure:
        """The PR curves of the ``top`` best submissions, as pr_curves.png draws them."""
        from disc21spark.matching.reports.curve_figure import curves_figure

        scored = [s for s in pool_report.ordered(self.submissions) if s.status == "ok"]
        title = f"DISC21 matching track: top {min(top, len(scored))} of {len(self.submissions)}"
        return curves_figure([(s.name, s.metrics) for s in scored[:top]], title)


@dataclass(frozen=True)
class DescriptorResult:
    """The descriptor track of one call.

    Attributes
    ----------
    metrics : MatchingMetrics
        The figures of the searched pairs, as metrics.json holds them.
    pairs : pandas.DataFrame or None
        With ``return_pairs=True``: the pairs (query_id, reference_id: str, score:
        float64) sorted by query, then score descending, then reference, as
        predictions.csv holds them; else None.
    budgets : pandas.DataFrame or None
        With ``budgets`` or ``knn_budgets``: budgets.csv as a table, one row per budget
        (``budget``, then every figure of ``metrics``, NaN where precision 0.9 is never
        reached); else None.
    """

    metrics: MatchingMetrics
    pairs: pd.DataFrame | None = None
    budgets: pd.DataFrame | None = None
