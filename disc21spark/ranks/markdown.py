"""rank_eval's report.md: the page a researcher reads, from the report's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from disc21spark.ranks import spec as rank_spec
from disc21spark.ranks.distances import ABOUT as DISTANCES
from disc21spark.ranks.tables import CHANCE_SLOPE_PER_1000


def _markdown_table(table: pd.DataFrame, columns: list[str], formats: dict) -> str:
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    rows = []
    for r in table.itertuples(index=False):
        cells = []
        for c in columns:
            v = getattr(r, c)
            if v is None or (isinstance(v, float) and np.isnan(v)):
                cells.append("–")
            elif isinstance(v, (bool, np.bool_)):
                cells.append("**at chance**" if v and c == "at_chance" else ("yes" if v else ""))
            else:
                cells.append(formats.get(c, "{}").format(v))
        rows.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(rows) + "\n"


FMT = {
    "mean_rank": "{:.1f}",
    "median_rank": "{:g}",
    "recall_at_1": "{:.3f}",
    "recall_at_10": "{:.3f}",
    "micro_ap": "{:.4f}",
    "recall_at_p90": "{:.4f}",
    "queries": "{:,}",
    "distractor_queries": "{:,}",
    "median_rank_mean": "{:.2f}",
    "median_rank_std": "{:.2f}",
    "mean_rank_mean": "{:.1f}",
    "mean_rank_std": "{:.1f}",
    "mean_rank_per_1000": "{:.2f}",
    "median_rank_per_1000": "{:.2f}",
    "mean_rank_r2": "{:.3f}",
    "median_rank_r2": "{:.3f}",
    "size": "{:,}",
    "ci_low": "{:g}",
    "ci_high": "{:g}",
    "mean_rank_intercept": "{:.1f}",
    "chance_mean_rank": "{:,.1f}",
    "mean_rank_share": "{:.2%}",
    "median_rank_share": "{:.2%}",
    "chance_per_1000": "{:g}",
    "library_size": "{:,}",
    "final": "{:.4g}",
    "queries_run": "{:,}",
    "queries_needed": "{:,.0f}",
    "share_of_library": "{:.2%}",
    "p_value": "{:.3g}",
    "p_holm": "{:.3g}",
    "pairs": "{:,}",
    "differ": "{:,}",
    "subset_size": "{:,.0f}",
    "parameter": "{:g}",
}


def _markdown(t: dict, pictures, queries, method_info, lay, job, bench, library, lines) -> str:
    """report.md: the opening (library, methods, who wins, the summary), then a section per
    table the run made, then the plots."""
    md = _opening(t, queries, method_info, job, bench, library, lines)
    n_refs = len(bench.references)
    for heading, intro, table, columns in _sections(t, lay, job, n_refs):
        md += [f"## {heading}", "", intro, ""]
        lead = ["method", "test"] if heading != "Difficulty sweeps" else ["method"]
        md.append(_markdown_table(table, lead + columns, FMT))
    md += ["## Plots", ""] + [f"![{p}]({p})" for p in pictures] + [""]
    return "\n".join(md)


def _opening(t: dict, queries, method_info, job, bench, library, lines) -> list[str]:
    s = t["summary"]
    n_refs = len(bench.references)
    ties = (
        "pessimistic: a reference tied with the original counts against the method, as DISC21 "
        "scores ties"
        if job.ties == "pessimistic"
        else "mid-rank: a tie group of k references shares the mean of its k places"
    )
    md = [f"# Rank of the original and μAP: {bench.folder.name}", ""]
    md.append(f"**Library**: {library['text']}.")
    md.append("")
    md.append(
        f"{n_refs:,} references (chance mean rank (N+1)/2 = {rank_spec.chance_mean_rank(n_refs):,.1f}), "
        f"{len(queries):,} queries ({int((queries.reference_id == '').sum()):,} distractors), tests "
        f"{', '.join(dict.fromkeys(queries.test))}; kNN {job.knn} pairs per query for μAP. "
        "Rank = number of references scoring at least as well as the original (1 = first); "
        f"ties: {ties}."
    )
    md += ["", "## Methods", ""]
    md += [
        f"- `{m['method']}` ({m['dim']} dims, compared by {DISTANCES.get(m['metric'], m['metric'])}): "
        f"{m['reference']}"
        for m in method_info
    ]
    md += ["", "## Who wins", ""] + [f"- {line}" for line in lines]
    md += [
        "",
        f"Paired tests: Wilcoxon signed-rank on the per-query ranks, the best method against "
        f"each other one, Holm-adjusted over a test's comparisons (comparisons.csv). A method "
        f"is **at chance** when its mean rank is within {rank_spec.CHANCE_Z} standard errors of "
        "a random order's (N+1)/2, or above it.",
    ]
    md += ["", "## Rank of the original (Howe 2000) and μAP (DISC21)", ""]
    md.append(
        _markdown_table(
            s,
            [
                "method",
                "test",
                "queries",
                "median_rank",
                "mean_rank",
                "chance_mean_rank",
                "median_rank_share",
                "mean_rank_share",
                "at_chance",
                "recall_at_1",
                "recall_at_10",
                "micro_ap",
            ],
            FMT,
        )
    )
    return md


def _sections(t: dict, lay, job, n_refs: int) -> list[tuple]:
    """(heading, introduction, table, columns) of each optional section, in page order."""
    found = [
        _stability_section(t, job, n_refs),
        _growth_section(t, lay),
        _queries_needed_section(t, job),
        _difficulty_section(t),
    ]
    return [section for section in found if section is not None]


def _stability_section(t: dict, job, n_refs: int) -> tuple | None:
    if "stability_summary" not in t:
        return None
    return (
        "Stability across disjoint library subsets",
        f"{job.subsets} subsets of about {n_refs // job.subsets:,} references; each query is "
        "ranked within the subset holding its original (Howe: crop-50 on three sets of 6,000, "
        "median ranks 5, 5, 7, mean 5.7 ± 1.2).",
        t["stability_summary"],
        [
            "subset_size",
            "chance_mean_rank",
            "median_rank_mean",
            "median_rank_std",
            "mean_rank_mean",
            "mean_rank_std",
        ],
    )


def _growth_section(t: dict, lay) -> tuple | None:
    if "slopes" not in t:
        return None
    return (
        "Growth with library size",
        f"Sizes {', '.join(f'{x:,}' for x in lay.sizes)}: every size holds all the originals, "
        "then other references in a seeded order; least-squares lines through the means and "
        "medians (R² only where the ranks vary). A method at chance grows like chance: "
        f"{CHANCE_SLOPE_PER_1000:g} per 1,000 images.",
        t["slopes"],
        [
            "mean_rank_per_1000",
            "mean_rank_r2",
            "median_rank_per_1000",
            "median_rank_r2",
            "chance_per_1000",
        ],
    )


def _queries_needed_section(t: dict, job) -> tuple | None:
    qn = t["queries_needed_summary"]
    if qn.empty:
        return None
    return (
        "Queries needed",
        "Queries added in a seeded order; the fewest after which the 95 % bootstrap interval "
        f"({job.resamples} resamples) stays within ±{rank_spec.TOLERANCE:.0%} of the final value, "
        "as a count and a share of the library (– : not reached with the queries run). The "
        "curves are in queries_needed.csv.",
        qn,
        ["statistic", "final", "queries_run", "queries_needed", "share_of_library"],
    )


def _difficulty_section(t: dict) -> tuple | None:
    if "difficulty" not in t:
        return None
    return (
        "Difficulty sweeps",
        "Tests that differ in one parameter only (Howe's slide 11): median and mean rank as "
        "the alteration grows; difficulty.png draws them on log axes.",
        t["difficulty"],
        ["family", "parameter", "median_rank", "mean_rank", "chance_mean_rank"],
    )
