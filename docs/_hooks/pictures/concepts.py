"""docs/concepts.md's figure: the worked example's six positions and its two μAP terms.

The page computes μAP by hand on six pairs; the figure draws that table. The code is the
judge: the example is scored with ``disc21spark.evaluate``, and the figure's bars are its
curve points (one per true pair), so a page whose hand count the code no longer agrees
with fails the build here instead of showing a wrong picture.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

# the page's two tables
TRUTH = pd.DataFrame({"query_id": ["Q1", "Q2", "Q3"], "reference_id": ["R1", "R2", ""]})
PAIRS = pd.DataFrame(
    {
        "query_id": ["Q1", "Q3", "Q2", "Q3", "Q2", "Q3"],
        "reference_id": ["R1", "R7", "R5", "R8", "R2", "R9"],
        "score": [0.9, 0.8, 0.7, 0.6, 0.5, 0.5],
    }
)
TERM_TEXT = ("0.5 × 1", "0.5 × 1/3")  # the page's words for the two terms


def positions(optimistic: bool = False) -> pd.DataFrame:
    """The pairs in the scorer's order (score down; among equal scores the false pairs
    first, or the true ones with ``optimistic``), with tp, precision and recall at each
    position: a DataFrame of 6 rows, columns position, pair, true, precision, recall."""
    truth = set(zip(TRUTH.query_id, TRUTH.reference_id, strict=True))
    table = PAIRS.assign(true=[pair in truth for pair in zip(PAIRS.query_id, PAIRS.reference_id)])
    table = table.sort_values(["score", "true"], ascending=[False, not optimistic], kind="stable")
    table = table.reset_index(drop=True)
    tp = table["true"].cumsum()
    positives = int((TRUTH.reference_id != "").sum())
    return table.assign(
        position=range(1, len(table) + 1),
        pair=table.query_id + "–" + table.reference_id,
        precision=tp / (table.index + 1),
        recall=tp / positives,
    )


def checked() -> tuple[pd.DataFrame, float, float]:
    """The code's curve points (precision, recall per true pair), its μAP and its
    optimistic μAP, once they are checked against the page's hand count.

    Raises:
        AssertionError: the hand count and ``disc21spark.evaluate`` disagree.
    """
    import disc21spark as ds

    metrics = ds.evaluate(TRUTH, PAIRS, resamples=0)
    optimistic = metrics.uncertainty.micro_ap_optimistic
    by_hand, by_hand_optimistic = positions(), positions(optimistic=True)
    true = by_hand[by_hand.true]
    curve = metrics.pr_curve
    assert curve.precision.round(12).tolist() == true.precision.round(12).tolist(), curve
    assert curve.recall.round(12).tolist() == true.recall.round(12).tolist(), curve
    for order, figure in ((by_hand, metrics.micro_ap), (by_hand_optimistic, optimistic)):
        gains = order.recall.diff().fillna(order.recall)
        assert abs((gains * order.precision).sum() - figure) < 1e-12, (order, figure)
    return curve, metrics.micro_ap, optimistic


def draw(png: Path) -> None:
    """Write the figure to ``png``: the μAP terms as shaded bars, the six positions as
    numbered dots, the optimistic place of the tied true pair as a hollow point, and a
    dashed line at precision 0.9.

    Raises:
        AssertionError: the page's hand count and the code disagree (``checked``).
    """
    from matplotlib.figure import Figure

    curve, micro_ap, optimistic_ap = checked()
    order, optimistic = positions(), positions(optimistic=True)
    fig = Figure(figsize=(7, 4.8), dpi=110)
    ax = fig.subplots()
    left = 0.0
    for (precision, recall), text in zip(curve[["precision", "recall"]].to_numpy(), TERM_TEXT):
        ax.bar(left, precision, width=recall - left, align="edge", color="C0", alpha=0.18)
        ax.text((left + recall) / 2, precision / 2, text, ha="center", va="center", color="C0")
        left = recall
    for row in order.itertuples():
        ax.plot(row.recall, row.precision, "o", color="C0" if row.true else "grey", ms=7)
        at = (row.recall, row.precision)
        ax.annotate(str(row.position), at, xytext=(6, 4), textcoords="offset points", fontsize=9)
    moved = optimistic[optimistic.true].iloc[-1]  # the tied true pair, one place earlier
    label = f"optimistic tie order: position {moved.position} (μAP {optimistic_ap:.1f})"
    ax.plot(moved.recall, moved.precision, "o", mfc="none", mec="C1", ms=9, mew=1.6, label=label)
    ax.axhline(0.9, color="grey", lw=0.8, ls="--", label="precision 0.9")
    ax.plot([], [], "o", color="C0", label="a true pair")
    ax.plot([], [], "o", color="grey", label="a false pair")
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1.12), ylim=(0, 1.1))
    ax.set_title(f"μAP = 0.5 × 1 + 0.5 × 1/3 = {micro_ap:.6f}", fontsize=11)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png)
