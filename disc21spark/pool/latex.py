"""leaderboard.tex: a pool's leaderboard as a LaTeX table ready for a paper.

The table takes the rows that leaderboard.csv/.json/.md/.html take (``report.records``):
the places, intervals, tiers and adjusted p-values are never computed again here. The
caption states how they were computed, with the settings found on the submissions
themselves, so that the file and ``Leaderboard.to_latex()`` give the same text. It needs
the ``booktabs`` package. Names come from teams: every character LaTeX reads as a command
is escaped, so a name can neither break the table nor run a macro.
"""

from __future__ import annotations

import re

from disc21spark.matching.model import Submission
from disc21spark.matching.stats.model import Resampling

LABEL = "tab:disc21-leaderboard"
TITLE = "DISC21 matching track: leaderboard"  # the caption in a list of tables
# the characters a name may hold that LaTeX would read as commands, and their text
SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "_": r"\_",
    "%": r"\%",
    "&": r"\&",
    "#": r"\#",
    "$": r"\$",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # the default font encoding (OT1) prints these three as other glyphs
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    # two hyphens would print as a dash: the empty group keeps them apart
    "-": "-{}",
}
# a hyphen is replaced only before another one; a control character (a blank line ends
# the cell's paragraph, which a tabular refuses) prints as a space
SPECIAL_RE = re.compile("|".join(re.escape(c) for c in SPECIAL if c != "-") + "|-(?=-)")
CONTROL_RE = re.compile("[\x00-\x1f\x7f]")
MU_AP = r"$\mu$AP"


def escape(text: object) -> str:
    """``text`` as LaTeX prints it verbatim: each of ``SPECIAL`` replaced, in one pass
    (so the braces of ``\\textbackslash{}`` are not escaped again), and each control
    character by a space."""
    return SPECIAL_RE.sub(lambda m: SPECIAL[m.group(0)], CONTROL_RE.sub(" ", str(text)))


def resampling_of(subs: list[Submission]) -> Resampling | None:
    """The bootstrap settings of a pool (every submission has the same): those of the
    first scored submission that has them; None when none has (no scored submission)."""
    for s in subs:
        if s.metrics is not None and s.metrics.uncertainty is not None:
            return s.metrics.uncertainty.resampling
    return None


def render(rows: list[dict], resampling: Resampling | None) -> str:
    """leaderboard.tex's text for ``rows`` (``report.records``: board order, invalid
    submissions last) drawn with ``resampling`` (None: no bootstrap): a ``table``
    float with a caption, a label and a booktabs ``tabular``."""
    scored = [r for r in rows if r["status"] == "ok"]
    invalid = [r for r in rows if r["status"] != "ok"]
    drawn = any(r["micro_ap_low"] is not None for r in scored)
    heads = _heads(drawn, resampling)
    body = [_scored_row(r, drawn) for r in scored]
    if invalid:
        body.append(r"\midrule")
        body += [_invalid_row(r, [head for head, _ in heads]) for r in invalid]
    return (
        "\n".join(
            [
                "% leaderboard.tex, written by disc21spark: needs \\usepackage{booktabs}",
                r"\begin{table}[tbp]",
                r"\centering",
                r"\caption[" + TITLE + "]{" + caption(rows, resampling, drawn) + "}",
                r"\label{" + LABEL + "}",
                r"\begin{tabular}{" + "".join(align for _, align in heads) + "}",
                r"\toprule",
                " & ".join(head for head, _ in heads) + r" \\",
                r"\midrule",
                *body,
                r"\bottomrule",
                r"\end{tabular}",
                r"\end{table}",
            ]
        )
        + "\n"
    )


def _heads(drawn: bool, resampling: Resampling | None) -> list[tuple[str, str]]:
    """(heading, column alignment) of each column; tiers and tests only with intervals."""
    if not drawn:
        return [("Rank", "r"), ("Submission", "l"), (MU_AP, "r"), (r"$\Delta$ next", "r")]
    level = _percent(resampling.confidence)
    return [
        ("Rank", "r"),
        ("Tier", "r"),
        ("Submission", "l"),
        (f"{MU_AP} [{level}\\% interval]", "r"),
        (r"$\Delta$ next", "r"),
        (r"$p_{\mathrm{Holm}}$", "r"),
    ]


def _scored_row(r: dict, drawn: bool) -> str:
    name = escape(r["submission"]) + (r"\textsuperscript{*}" if r["tie_sensitive"] else "")
    delta = "" if r["next_difference"] is None else f"{r['next_difference']:.4f}"
    if not drawn:
        return f"{r['rank']} & {name} & {r['micro_ap']:.4f} & {delta} \\\\"
    value = f"{r['micro_ap']:.4f}"
    if r["micro_ap_low"] is not None:
        value += f" [{r['micro_ap_low']:.4f}, {r['micro_ap_high']:.4f}]"
    tier = "" if r["tier"] is None else str(r["tier"])
    return f"{r['rank']} & {tier} & {name} & {value} & {delta} & {_p(r['next_p_adjusted'])} \\\\"


def _invalid_row(r: dict, heads: list[str]) -> str:
    """An invalid submission, unranked (an en dash), below the board; its reason (a line
    naming the organiser's file) stays in leaderboard.md."""
    at = heads.index("Submission")
    after = len(heads) - at - 1
    cells = ["--", *[""] * (at - 1), escape(r["submission"])]
    return " & ".join(cells) + r" & \multicolumn{" + str(after) + r"}{l}{invalid} \\"


def _p(value: float | None) -> str:
    if value is None:
        return ""
    return "$<$0.001" if value < 0.001 else f"{value:.3f}"


def _percent(confidence: float) -> str:
    return f"{round(confidence * 100, 10):g}"


def caption(rows: list[dict], resampling: Resampling | None, drawn: bool) -> str:
    """What the table shows and how each figure was computed, in plain sentences."""
    scored = [r for r in rows if r["status"] == "ok"]
    queries = scored[0]["n_queries"] if scored else 0
    invalid = len(rows) - len(scored)
    parts = [
        f"DISC21 matching track: micro-average precision ({MU_AP}) of "
        f"{_count(len(scored), 'submission')} on {queries:,} queries, ranked by {MU_AP}, "
        "then recall at precision 0.9, then name. Among equal scores, the true pairs "
        "count last, as in the official scorer."
    ]
    if drawn:
        parts.append(_method(resampling))
    else:
        resamples = 0 if resampling is None else resampling.resamples
        parts.append(
            f"No intervals, tiers or tests: the run drew {resamples:,} bootstrap resamples."
        )
    parts.append(rf"$\Delta$ next: the {MU_AP} difference from the next place.")
    if any(r["tie_sensitive"] for r in scored):
        parts.append(r"\textsuperscript{*}The place changes when the true pairs count first.")
    if invalid:
        parts.append(f"{_count(invalid, 'invalid submission')}, listed last, not ranked.")
    return " ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _method(r: Resampling) -> str:
    """The caption's sentences on the intervals, the paired tests and the correction."""
    alpha = f"{round(1.0 - r.confidence, 10):g}"
    return (
        f"Intervals: {_percent(r.confidence)}\\% percentile bootstrap over the queries "
        f"({r.resamples:,} resamples, Poisson(1) weights per query, seed {r.seed}). "
        r"$p_{\mathrm{Holm}}$: the one-sided paired bootstrap p-value of ``this place is no "
        "better than the next'', adjusted over the neighbour pairs by Holm's step-down "
        "method. A new "
        f"tier starts below each pair with $p_{{\\mathrm{{Holm}}}} < {alpha}$: places in "
        "one tier are not told apart."
    )
