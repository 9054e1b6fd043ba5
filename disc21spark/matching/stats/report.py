"""The intervals and the tie sensitivity in words, for the terminal table."""

from __future__ import annotations

from disc21spark.matching.stats.model import Uncertainty

LABELS = (
    ("micro_ap", "μAP"),
    ("recall_at_p90", "recall at precision 0.9"),
    ("recall_at_rank1", "recall at rank 1"),
    ("recall_at_rank10", "recall at rank 10"),
)


def uncertainty_lines(u: Uncertainty, width: int) -> list[str]:
    """Lines of the summary table: the optimistic μAP, then each interval."""
    lines = [f"{'μAP, ties broken optimistically':<{width}}  {u.micro_ap_optimistic:>12.6f}"]
    level = f"{u.resampling.confidence:.0%}"
    for key, label in LABELS:
        found = u.interval(key)
        if found is not None:
            text = f"{found[0]:.6f} – {found[1]:.6f}"
            lines.append(f"{label + ', ' + level + ' interval':<{width}}  {text:>12}")
    if u.replicates:
        lines.append(
            f"(bootstrap over queries: {u.resampling.resamples:,} resamples, "
            f"seed {u.resampling.seed})"
        )
    return lines
