"""rank_eval's report: tidy tables (Parquet and CSV), plots and a Markdown page.

Read as a researcher would: every rank is shown beside chance ((N + 1) / 2 for a library of
N) and as a share of the library; a method is only said to win after a paired test on the
per-query ranks; the library the figures describe is named. The rooms: ``tables.py`` (the
figures), ``figures.py`` (the plots), ``markdown.py`` (report.md), ``library_text.py``
(what the library is); this module writes them and prints the terminal table."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from disc21spark.ranks.figures import figures, plots
from disc21spark.ranks.groups import lines as group_lines
from disc21spark.ranks.library_text import library_about
from disc21spark.ranks.markdown import _markdown
from disc21spark.ranks.tables import difficulty, records, tables, winners

# what callers of this module use by name (the tests among them)
__all__ = [
    "_markdown",
    "difficulty",
    "figures",
    "library_about",
    "records",
    "stdout_table",
    "tables",
    "winners",
    "write",
]


def _save(stage: Path, name: str, table: pd.DataFrame) -> None:
    table.to_parquet(stage / f"{name}.parquet", index=False)
    table.to_csv(stage / f"{name}.csv", index=False)


def write(stage: Path, queries, ranked, micro, method_info, lay, job, bench, grouped=None) -> dict:
    """Tables, plots, report.md and rank_eval.json in ``stage``; the JSON document.
    ``grouped``: μAP by query group (``groups.by_group``), written as by_group.csv/.parquet."""
    n_refs = len(bench.references)
    metrics = {m["method"]: m["metric"] for m in method_info}
    t = tables(queries, ranked, micro, lay, job, n_refs, metrics)
    for name, table in t.items():
        _save(stage, name, table)
    pictures = plots(stage, t, n_refs)
    library = library_about(list(bench.settings.get("library", [])), list(bench.references.path))
    s = t["summary"]
    lines = winners(s, t["comparisons"])
    (stage / "report.md").write_text(
        _markdown(t, pictures, queries, method_info, lay, job, bench, library, lines)
    )
    document = {
        "bench": str(bench.folder.resolve()),
        "library": library,
        "methods": method_info,
        "ties": job.ties,
        "knn": job.knn,
        "subsets": job.subsets,
        "sizes": list(lay.sizes),
        "seed": job.seed,
        "summary": records(s),
        "comparisons": records(t["comparisons"]),
        "queries_needed": records(t["queries_needed_summary"]),
        "winners": lines,
    }
    if "slopes" in t:
        document["slopes"] = records(t["slopes"])
    if "stability_summary" in t:
        document["stability"] = records(t["stability_summary"])
    if "difficulty" in t:
        document["difficulty"] = records(t["difficulty"])
    if grouped is not None:
        _save(stage, "by_group", grouped)
        document["by_group"] = records(grouped)
    (stage / "rank_eval.json").write_text(json.dumps(document, indent=2) + "\n")
    return document


def stdout_table(document: dict) -> str:
    s = pd.DataFrame(document["summary"])
    lines = [
        f"{'method':<14} {'test':<22} {'median':>7} {'mean':>8} {'chance':>8} {'mean/N':>7} "
        f"{'R@1':>6} {'R@10':>6} {'μAP':>7}"
    ]
    for r in s.itertuples():

        def f(v, spec):
            return "–" if v is None or v != v else format(v, spec)

        mark = "  at chance" if getattr(r, "at_chance", False) else ""
        lines.append(
            f"{r.method:<14} {r.test:<22} {f(r.median_rank, '7g')} {f(r.mean_rank, '8.1f')} "
            f"{f(r.chance_mean_rank, '8.1f')} {f(r.mean_rank_share, '7.2%')} "
            f"{f(r.recall_at_1, '6.3f')} {f(r.recall_at_10, '6.3f')} {f(r.micro_ap, '7.4f')}{mark}"
        )
    if document.get("by_group"):
        lines += [""] + group_lines(pd.DataFrame(document["by_group"]))
    return "\n".join(
        lines
        + [""]
        + document["winners"]
        + ["", f"library: {document['library']['text']}", f"ties: {document['ties']}"]
    )
