"""rank_eval's report: tidy tables (Parquet and CSV), plots and a Markdown page that says
in words which method wins which test."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from disc21spark.matching.model import MatchingMetrics  # noqa: E402
from disc21spark.ranks import spec as rank_spec  # noqa: E402


def _save(stage: Path, name: str, table: pd.DataFrame) -> None:
    table.to_parquet(stage / f"{name}.parquet", index=False)
    table.to_csv(stage / f"{name}.csv", index=False)


def tables(queries: pd.DataFrame, ranked: pd.DataFrame, micro: dict, lay: rank_spec.Layout, job) -> dict:
    """Every table of the report, from the per-query ranks and the scorer's metrics."""
    q = queries[["query_id", "test", "reference_id"]]
    per_query = ranked.merge(q, on="query_id")
    matched = per_query[per_query.reference_id != ""].copy()
    methods = list(dict.fromkeys(ranked.method))
    tests = list(dict.fromkeys(queries.test))
    ranks_table = matched[["method", "test", "query_id", "reference_id", "rank", "subset", "rank_in_subset"]]

    summary, stability, stab_summary, sizes, slopes, needed = [], [], [], [], [], []
    size_rows = []
    for m in methods:
        for t in tests:
            key = {"method": m, "test": t}
            sel = matched[(matched.method == m) & (matched.test == t)]
            distractors = int(((per_query.method == m) & (per_query.test == t) & (per_query.reference_id == "")).sum())
            summary.append(_summary_row(key, sel, distractors, micro.get((m, t))))
            if job.subsets > 1:
                per_subset, across = _stability(key, sel, job.subsets)
                stability += per_subset
                stab_summary.append(across)
            if lay.sizes:
                per_size, rows, slope = _growth(key, sel, lay.sizes)
                sizes += per_size
                size_rows += rows
                slopes.append(slope)
            for n in rank_spec.queries_needed(sel["rank"].to_numpy(), job.seed, resamples=job.resamples):
                needed.append({**key, **n})
    out = {
        "ranks": ranks_table.reset_index(drop=True),
        "summary": pd.DataFrame(summary),
        "queries_needed": pd.DataFrame(needed, columns=["method", "test", "queries", "median_rank", "ci_low", "ci_high"]),
    }
    if job.subsets > 1:
        out["stability"] = pd.DataFrame(stability)
        out["stability_summary"] = pd.DataFrame(stab_summary)
    if lay.sizes:
        out["sizes"] = pd.DataFrame(sizes)
        out["size_ranks"] = pd.concat(size_rows, ignore_index=True) if size_rows else pd.DataFrame()
        out["slopes"] = pd.DataFrame(slopes)
    return out


def _summary_row(
    key: dict, sel: pd.DataFrame, distractors: int, mm: MatchingMetrics | None
) -> dict:
    """Howe's figures of one (method, test) and the scorer's μAP beside them."""
    row = {**key, **rank_spec.summary(sel["rank"].to_numpy())}
    row["distractor_queries"] = distractors
    row["micro_ap"] = mm.micro_ap if mm else None
    row["recall_at_p90"] = mm.recall_at_p90 if mm else None
    row["pairs"] = mm.n_predictions if mm else 0
    return row


def _stability(key: dict, sel: pd.DataFrame, subsets: int) -> tuple[list[dict], dict]:
    """Figures of each disjoint library subset, and their spread across the subsets."""
    per = [rank_spec.summary(sel[sel.subset == k].rank_in_subset.to_numpy()) for k in range(subsets)]
    med = [p["median_rank"] for p in per if p["queries"]]
    mean = [p["mean_rank"] for p in per if p["queries"]]
    across = {
        **key, "subsets": subsets,
        "median_rank_mean": float(np.mean(med)) if med else None,
        "median_rank_std": float(np.std(med, ddof=1)) if len(med) > 1 else None,
        "mean_rank_mean": float(np.mean(mean)) if mean else None,
        "mean_rank_std": float(np.std(mean, ddof=1)) if len(mean) > 1 else None,
    }  # fmt: skip
    return [{**key, "subset": k, **s} for k, s in enumerate(per)], across


def _growth(
    key: dict, sel: pd.DataFrame, sizes: tuple[int, ...]
) -> tuple[list[dict], list[pd.DataFrame], dict]:
    """Figures at each library size, every query's rank at each, and the fitted lines."""
    by_size = np.array(list(sel.rank_by_size), dtype=np.int64).reshape(len(sel), len(sizes))
    per_size, rows = [], []
    for j, size in enumerate(sizes):
        per_size.append({**key, "size": size, **rank_spec.summary(by_size[:, j])})
        rows.append(pd.DataFrame({**key, "query_id": sel.query_id.to_numpy(),
                                  "size": size, "rank": by_size[:, j]}))  # fmt: skip
    x = np.asarray(sizes, dtype=float)
    fm = rank_spec.fit_line(x, [r["mean_rank"] for r in per_size])
    fd = rank_spec.fit_line(x, [r["median_rank"] for r in per_size])
    slope = {
        **key,
        "mean_rank_per_1000": None if fm["slope"] is None else 1000 * fm["slope"],
        "mean_rank_intercept": fm["intercept"], "mean_rank_r2": fm["r2"],
        "median_rank_per_1000": None if fd["slope"] is None else 1000 * fd["slope"],
        "median_rank_r2": fd["r2"],
    }  # fmt: skip
    return per_size, rows, slope


def winners(summary: pd.DataFrame) -> list[str]:
    """One sentence per test: the best method by median rank (then mean rank), and by μAP."""
    lines = []
    for test, part in summary.groupby("test", sort=False):
        part = part.dropna(subset=["median_rank"])
        if part.empty:
            continue
        by_rank = part.sort_values(["median_rank", "mean_rank", "method"])
        best = by_rank.iloc[0]
        tied = by_rank[(by_rank.median_rank == best.median_rank) & (by_rank.mean_rank == best.mean_rank)]
        others = ", ".join(f"{r.method} {r.median_rank:g}" for r in by_rank.iloc[len(tied):].itertuples())
        names = list(tied.method)
        who = (f"{', '.join(names[:-1])} and {names[-1]} tie" if len(names) > 1 else f"{names[0]} wins")
        text = (f"**{test}**: {who} on rank (median {best.median_rank:g}, mean {best.mean_rank:.1f}"
                + (f"; others' medians: {others}" if others else "") + ")")  # fmt: skip
        ap = part.dropna(subset=["micro_ap"]).sort_values(["micro_ap", "method"], ascending=[False, True])
        if not ap.empty:
            top = ap.iloc[0]
            same = top.method in set(tied.method)
            text += (f"; by μAP {'also ' if same else ''}{top.method} ({top.micro_ap:.3f}"
                     + (f" vs {ap.iloc[1].method} {ap.iloc[1].micro_ap:.3f}" if len(ap) > 1 else "") + ")")  # fmt: skip
        lines.append(text + ".")
    return lines


def _markdown_table(table: pd.DataFrame, columns: list[str], formats: dict) -> str:
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    rows = []
    for r in table.itertuples(index=False):
        cells = []
        for c in columns:
            v = getattr(r, c)
            if v is None or (isinstance(v, float) and np.isnan(v)):
                cells.append("–")
            else:
                cells.append(formats.get(c, "{}").format(v))
        rows.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(rows) + "\n"


FMT = {"mean_rank": "{:.1f}", "median_rank": "{:g}", "recall_at_1": "{:.3f}", "recall_at_10": "{:.3f}",
       "micro_ap": "{:.4f}", "recall_at_p90": "{:.4f}", "queries": "{:,}", "distractor_queries": "{:,}",
       "median_rank_mean": "{:.2f}", "median_rank_std": "{:.2f}", "mean_rank_mean": "{:.1f}",
       "mean_rank_std": "{:.1f}", "mean_rank_per_1000": "{:.2f}", "median_rank_per_1000": "{:.2f}",
       "mean_rank_r2": "{:.3f}", "median_rank_r2": "{:.3f}", "size": "{:,}", "ci_low": "{:g}",
       "ci_high": "{:g}", "mean_rank_intercept": "{:.1f}"}  # fmt: skip


def _save_figure(fig, stage: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(stage / name, dpi=110)
    plt.close(fig)
    return name


def plots(stage: Path, t: dict) -> list[str]:
    """The report's figures, saved in ``stage``: their file names."""
    methods = list(dict.fromkeys(t["summary"].method))
    tests = list(dict.fromkeys(t["summary"].test))
    made = [
        _rank_histograms(stage, t["ranks"], methods, tests),
        _rank_bars(stage, t["summary"], methods, tests),
    ]
    if "sizes" in t:
        made.append(_rank_vs_size(stage, t["sizes"], methods, tests))
    if "stability" in t:
        made.append(_stability_boxes(stage, t["stability"], methods, tests))
    return made


def _rank_histograms(stage: Path, ranks: pd.DataFrame, methods: list, tests: list) -> str:
    n = len(tests)
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    top = max(2, int(ranks["rank"].max()) if len(ranks) else 2)
    bins = np.unique(np.round(np.logspace(0, np.log10(top + 1), 30)))
    for ax, test in zip(axes.ravel(), tests):
        for m in methods:
            r = ranks[(ranks.method == m) & (ranks.test == test)]["rank"]
            if len(r):
                ax.hist(r, bins=bins, histtype="step", label=m, linewidth=1.5)
        ax.set_xscale("log")
        ax.set_title(test, fontsize=10)
        ax.set_xlabel("rank of the original")
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    axes[0, 0].set_ylabel("queries")
    axes[0, 0].legend(fontsize=8)
    return _save_figure(fig, stage, "rank_distributions.png")


def _rank_bars(stage: Path, s: pd.DataFrame, methods: list, tests: list) -> str:
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    width = 0.8 / max(1, len(methods))
    x = np.arange(len(tests))
    for ax, col in zip(axes, ("median_rank", "mean_rank")):
        for i, m in enumerate(methods):
            vals = [s[(s.method == m) & (s.test == tt)][col].iloc[0] for tt in tests]
            ax.bar(x + i * width, [v if v == v and v is not None else 0 for v in vals], width, label=m)
        ax.set_xticks(x + width * (len(methods) - 1) / 2)
        ax.set_xticklabels(tests, rotation=20, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(col.replace("_", " "))
    axes[0].legend(fontsize=8)
    return _save_figure(fig, stage, "rank_bars.png")


def _rank_vs_size(stage: Path, sz: pd.DataFrame, methods: list, tests: list) -> str:
    n = len(tests)
    fig, axes = plt.subplots(1, n, figsize=(3.8 * n, 3.3), squeeze=False)
    for ax, test in zip(axes[0], tests):
        for m in methods:
            part = sz[(sz.method == m) & (sz.test == test)]
            ax.plot(part["size"], part.mean_rank, marker="o", label=m)
        ax.set_title(test, fontsize=10)
        ax.set_xlabel("library size")
    axes[0, 0].set_ylabel("mean rank")
    axes[0, 0].legend(fontsize=8)
    return _save_figure(fig, stage, "rank_vs_size.png")


def _stability_boxes(stage: Path, st: pd.DataFrame, methods: list, tests: list) -> str:
    fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(tests) * len(methods), 3.6))
    labels, data = [], []
    for test in tests:
        for m in methods:
            part = st[(st.method == m) & (st.test == test)]
            data.append(part.median_rank.dropna().to_numpy())
            labels.append(f"{m}\n{test}")
    ax.boxplot(data, showmeans=True)
    ax.set_xticks(range(1, len(labels) + 1))
    ax.set_xticklabels(labels, fontsize=7, rotation=30)
    ax.set_ylabel("median rank per subset")
    return _save_figure(fig, stage, "stability.png")


def write(stage: Path, queries, ranked, micro, method_info, lay, job, bench) -> dict:
    """Tables, plots, report.md and rank_eval.json in ``stage``; the JSON document."""
    t = tables(queries, ranked, micro, lay, job)
    for name, table in t.items():
        _save(stage, name, table)
    pictures = plots(stage, t)
    (stage / "report.md").write_text(_markdown(t, pictures, queries, method_info, lay, job, bench))
    s = t["summary"]
    document = {
        "bench": str(bench.folder.resolve()),
        "methods": method_info,
        "knn": job.knn,
        "subsets": job.subsets,
        "sizes": list(lay.sizes),
        "seed": job.seed,
        "summary": records(s),
        "winners": winners(s),
    }
    if "slopes" in t:
        document["slopes"] = records(t["slopes"])
    if "stability_summary" in t:
        document["stability"] = records(t["stability_summary"])
    (stage / "rank_eval.json").write_text(json.dumps(document, indent=2) + "\n")
    return document


def _markdown(t: dict, pictures: list[str], queries, method_info, lay, job, bench) -> str:
    s = t["summary"]
    md = [f"# Rank of the original and μAP: {bench.folder.name}", ""]
    md.append(f"{len(bench.references):,} references, {len(queries):,} queries "
              f"({int((queries.reference_id == '').sum()):,} distractors), tests "
              f"{', '.join(dict.fromkeys(queries.test))}; kNN {job.knn} pairs per query for μAP. "
              "Rank = number of references scoring at least as well as the original (1 = first; "
              "ties counted against the method).")  # fmt: skip
    md += ["", "## Methods", ""]
    md += [f"- `{m['method']}` ({m['metric']}, {m['dim']} dims): {m['reference']}" for m in method_info]
    md += ["", "## Who wins", ""] + [f"- {line}" for line in winners(s)]
    md += ["", "## Rank of the original (Howe 2000) and μAP (DISC21)", ""]
    md.append(_markdown_table(s, ["method", "test", "queries", "distractor_queries", "median_rank", "mean_rank",
                                  "recall_at_1", "recall_at_10", "micro_ap", "recall_at_p90"], FMT))  # fmt: skip
    sections = []
    if "stability_summary" in t:
        sections.append((
            "Stability across disjoint library subsets",
            f"{job.subsets} subsets of about {len(bench.references) // job.subsets:,} references; "
            "each query is ranked within the subset holding its original.",
            t["stability_summary"],
            ["median_rank_mean", "median_rank_std", "mean_rank_mean", "mean_rank_std"],
        ))  # fmt: skip
    if "slopes" in t:
        sections.append((
            "Growth with library size",
            f"Sizes {', '.join(f'{x:,}' for x in lay.sizes)}: every size holds all the originals, "
            "then other references in a seeded order; least-squares line through the means.",
            t["slopes"],
            ["mean_rank_per_1000", "mean_rank_r2", "median_rank_per_1000", "median_rank_r2"],
        ))  # fmt: skip
    qn = t["queries_needed"]
    if not qn.empty:
        sections.append((
            "Queries needed",
            "Median rank on the first n queries (seeded order) and its 95 % bootstrap interval "
            f"({job.resamples} resamples); the full curve is in queries_needed.csv.",
            qn.groupby(["method", "test"], sort=False).tail(3),
            ["queries", "median_rank", "ci_low", "ci_high"],
        ))  # fmt: skip
    for heading, intro, table, columns in sections:
        md += [f"## {heading}", "", intro, ""]
        md.append(_markdown_table(table, ["method", "test", *columns], FMT))
    md += ["## Plots", ""] + [f"![{p}]({p})" for p in pictures] + [""]
    return "\n".join(md)


def records(table: pd.DataFrame) -> list[dict]:
    """Rows for JSON with every digit (pandas' to_json keeps 10), NaN as null."""
    rows = table.astype(object).where(table.notna(), None).to_dict(orient="records")
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in rows]


def stdout_table(document: dict) -> str:
    s = pd.DataFrame(document["summary"])
    lines = [f"{'method':<14} {'test':<22} {'median':>7} {'mean':>8} {'R@1':>6} {'R@10':>6} {'μAP':>7}"]
    for r in s.itertuples():
        def f(v, spec):
            return "–" if v is None or v != v else format(v, spec)
        lines.append(f"{r.method:<14} {r.test:<22} {f(r.median_rank, '7g')} {f(r.mean_rank, '8.1f')} "
                     f"{f(r.recall_at_1, '6.3f')} {f(r.recall_at_10, '6.3f')} {f(r.micro_ap, '7.4f')}")  # fmt: skip
    return "\n".join(lines + [""] + document["winners"])
