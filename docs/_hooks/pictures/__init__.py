"""The docs' pictures, made fresh by every docs build: ``python -m pictures FOLDER``
(with docs/_hooks/ on the path; docs/_hooks/pictures_hook.py runs it before MkDocs reads
the pages).

Every picture but one is an output of the product's own commands, copied as they wrote
it: the PR curve of ``evaluate``, a pool's leaderboard.html in headless Chromium, the
descriptor track's budgets curve, make-queries' contact sheet and rank-eval's rank plot.
The one drawn here is docs/concepts.md's worked example (pictures/concepts.py).
"""

from __future__ import annotations

from pictures import concepts, outputs, screenshot

# docs/img/generated/NAME ← the output it copies, or None: made here
FROM_OUTPUTS = {
    "pr_curve.png": outputs.evaluate_one,
    "leaderboard.png": outputs.pool,  # leaderboard.html, rendered
    "budgets.png": outputs.budgets,
    "contact_sheet.png": outputs.bench,
    "rank_plot.png": outputs.rank_report,
}
NAMES = ("concepts_pr_curve.png", *FROM_OUTPUTS)

__all__ = ["FROM_OUTPUTS", "NAMES", "concepts", "outputs", "screenshot"]
