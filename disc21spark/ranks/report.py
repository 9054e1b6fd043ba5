"""rank_eval's report: tidy tables (Parquet and CSV), plots and a Markdown page.

Read as a researcher would: every rank is shown beside chance ((N + 1) / 2 for a library of
N) and as a share of the library; a method is only said to win after a paired test on the
per-query ranks; the library the figures describe is named."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from disc21spark.matching.model import MatchingMetrics
from disc21spark.queries.transforms import parse_tests
from disc21spark.ranks import spec as rank_spec
from disc21spark.ranks.distances import ABOUT as DISTANCES

CHANCE_SLOPE_PER_1000 = 500.0  # (N + 1) / 2 grows by 0.5 per image


def _save(stage: Path, name: str, table: pd.DataFrame) -> None:
    table.to_parquet(stage / f"{name}.parquet", index=False)
    table.to_csv(stage / f"{name}.csv", index=False)


# -- tables ------------------------------------------------------------------------------------


def tables(
    queries: pd.DataFrame, ranked: pd.DataFrame, micro: dict, lay: rank_spec.Layout, job,
    n_refs: int, metrics: dict | None = None,
) -> dict:  # fmt: skip
    """Every table of the report, from the per-query ranks and the scorer's metrics."""
    q = queries[["query_id", "test", "reference_id"]]
    per_query = ranked.merge(q, on="query_id")
    matched = per_query[per_query.reference_id != ""].copy()
    methods = list(dict.fromkeys(ranked.method))
    tests = list(dict.fromkeys(queries.test))
    matched["tied"] = matched["rank_pessimistic"] - matched["better"]
    ranks_table = matched[["method", "test", "query_id", "reference_id", "rank", "rank_pessimistic",
                           "tied", "subset", "rank_in_subset"]]  # fmt: skip
    subset_sizes = np.bincount(lay.subset, minlength=job.subsets)

    summary, stability, stab_summary, sizes, slopes, needed, needed_summary = [], [], [], [], [], [], []
    size_rows = []
    for m in methods:
        for t in tests:
            key = {"method": m, "test": t}
            sel = matched[(matched.method == m) & (matched.test == t)]
            distractors = int(((per_query.method == m) & (per_query.test == t) & (per_query.reference_id == "")).sum())
            row = _summary_row(key, sel, distractors, micro.get((m, t)), n_refs)
            row["distance"] = (metrics or {}).get(m)
            summary.append(row)
            if job.subsets > 1:
                per_subset, across = _stability(key, sel, job.subsets, subset_sizes)
                stability += per_subset
                stab_summary.append(across)
            if lay.sizes:
                per_size, rows, slope = _growth(key, sel, lay.sizes)
                sizes += per_size
                size_rows += rows
                slopes.append(slope)
            curve = rank_spec.queries_needed(sel["rank"].to_numpy(), job.seed, resamples=job.resamples)
            needed += [{**key, **n} for n in curve]
            needed_summary += [{**key, **n} for n in rank_spec.queries_needed_summary(curve, n_refs)]
    summary_table = pd.DataFrame(summary)
    out = {
        "ranks": ranks_table.reset_index(drop=True),
        "summary": summary_table,
        "comparisons": comparisons(summary_table, ranks_table),
        "queries_needed": pd.DataFrame(
            needed, columns=["method", "test", "statistic", "queries", "value", "ci_low", "ci_high"]
        ),
        "queries_needed_summary": pd.DataFrame(
            needed_summary, columns=["method", "test", "statistic", "final", "queries_run",
                                     "queries_needed", "share_of_library"],
        ),  # fmt: skip
    }
    families = difficulty(summary_table)
    if not families.empty:
        out["difficulty"] = families
    if job.subsets > 1:
        out["stability"] = pd.DataFrame(stability)
        out["stability_summary"] = pd.DataFrame(stab_summary)
    if lay.sizes:
        out["sizes"] = pd.DataFrame(sizes)
        out["size_ranks"] = pd.concat(size_rows, ignore_index=True) if size_rows else pd.DataFrame()
        out["slopes"] = pd.DataFrame(slopes)
    return out


def _summary_row(
    key: dict, sel: pd.DataFrame, distractors: int, mm: MatchingMetrics | None, n_refs: int
) -> dict:
    """Howe's figures of one (method, test), chance beside them, and the scorer's μAP."""
    row = {**key, **rank_spec.summary(sel["rank"].to_numpy(), n_refs)}
    row["distractor_queries"] = distractors
    row["micro_ap"] = mm.micro_ap if mm else None
    row["recall_at_p90"] = mm.recall_at_p90 if mm else None
    row["pairs"] = mm.n_predictions if mm else 0
    return row


def _stability(
    key: dict, sel: pd.DataFrame, subsets: int, subset_sizes: np.ndarray
) -> tuple[list[dict], dict]:
    """Figures of each disjoint library subset, and their spread across the subsets."""
    per = [rank_spec.summary(sel[sel.subset == k].rank_in_subset.to_numpy(), int(subset_sizes[k]))
           for k in range(subsets)]  # fmt: skip
    med = [p["median_rank"] for p in per if p["queries"]]
    mean = [p["mean_rank"] for p in per if p["queries"]]
    across = {
        **key, "subsets": subsets, "subset_size": float(np.mean(subset_sizes)),
        "chance_mean_rank": rank_spec.chance_mean_rank(float(np.mean(subset_sizes))),
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
    by_size = np.array(list(sel.rank_by_size), dtype=np.float64).reshape(len(sel), len(sizes))
    per_size, rows = [], []
    for j, size in enumerate(sizes):
        per_size.append({**key, "size": size, **rank_spec.summary(by_size[:, j], size)})
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
        "median_rank_intercept": fd["intercept"], "median_rank_r2": fd["r2"],
        "chance_per_1000": CHANCE_SLOPE_PER_1000,
    }  # fmt: skip
    return per_size, rows, slope


def comparisons(summary: pd.DataFrame, ranks: pd.DataFrame) -> pd.DataFrame:
    """Per test, the best method (lowest median rank, then mean) against each other one:
    Wilcoxon signed-rank test on the per-query ranks of the same queries, p-values
    Holm-adjusted over the test's comparisons."""
    rows = []
    for test, part in summary.groupby("test", sort=False):
        part = part.dropna(subset=["median_rank"]).sort_values(["median_rank", "mean_rank", "method"])
        if len(part) < 2:
            continue
        best = part.iloc[0].method
        mine = ranks[ranks.test == test].pivot(index="query_id", columns="method", values="rank")
        found = []
        for other in part.method.iloc[1:]:
            both = mine[[best, other]].dropna()
            found.append({"test": test, "best": best, "other": other,
                          **rank_spec.paired_test(both[best], both[other])})  # fmt: skip
        for row, p in zip(found, rank_spec.holm([r["p_value"] for r in found])):
            row["p_holm"] = p
        rows += found
    return pd.DataFrame(rows, columns=["test", "best", "other", "pairs", "differ", "statistic",
                                       "p_value", "p_holm"])  # fmt: skip


def winners(summary: pd.DataFrame, compared: pd.DataFrame) -> list[str]:
    """One sentence per test. "X wins" only when the paired test says X's ranks are lower
    than every other method's (Holm-adjusted p < ALPHA); else the methods it cannot be told
    apart from are named with their p-values. μAP is reported, not tested."""
    lines = []
    for test, part in summary.groupby("test", sort=False):
        part = part.dropna(subset=["median_rank"]).sort_values(["median_rank", "mean_rank", "method"])
        if part.empty:
            continue
        best = part.iloc[0]
        mine = compared[compared.test == test]
        same = mine[mine.p_holm >= rank_spec.ALPHA]
        figures = f"median {best.median_rank:g}, mean {best.mean_rank:.1f}"
        if part.shape[0] == 1:
            text = f"**{test}**: {best.method} alone ({figures})"
        elif same.empty:
            worst_p = mine.p_holm.max()
            text = (f"**{test}**: {best.method} wins on rank ({figures}; lower ranks than each "
                    f"other method, Wilcoxon signed-rank, Holm-adjusted p ≤ {worst_p:.2g})")  # fmt: skip
        else:
            tied = ", ".join(
                f"{r.other} (p = {r.p_holm:.2g}" + (", identical ranks)" if r.differ == 0 else ")")
                for r in same.itertuples()
            )
            text = (f"**{test}**: no winner on rank: {best.method} has the lowest ({figures}) "
                    f"but is not told apart from {tied} by a Wilcoxon signed-rank test at "
                    f"{rank_spec.ALPHA:g}")  # fmt: skip
        others = ", ".join(f"{r.method} {r.median_rank:g}" for r in part.iloc[1:].itertuples())
        if others:
            text += f"; others' medians: {others}"
        chance = part[part.at_chance.fillna(False).astype(bool)]
        if len(chance):
            text += f"; at chance: {', '.join(chance.method)}"
        ap = part.dropna(subset=["micro_ap"]).sort_values(["micro_ap", "method"], ascending=[False, True])
        if not ap.empty:
            top = ap.iloc[0]
            text += (f"; highest μAP {top.method} ({top.micro_ap:.3f}"
                     + (f" vs {ap.iloc[1].method} {ap.iloc[1].micro_ap:.3f}" if len(ap) > 1 else "") + ")")  # fmt: skip
        lines.append(text + ".")
    return lines


def _sweep_key(test: str) -> list[tuple[tuple, str, float]]:
    """(what the test holds apart from one step's number, that step's kind, the number) for
    each step with a numeric parameter: tests sharing the first are one difficulty sweep."""
    found = []
    steps = parse_tests(test)[0].steps
    for i, step in enumerate(steps):
        value = step.value
        if step.kind.name == "jumble":
            value = value[0] * value[1]  # difficulty grows with the number of tiles
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        rest = tuple(s.text for j, s in enumerate(steps) if j != i)
        found.append(((rest, i, step.kind.name), step.kind.name, float(value)))
    return found


def difficulty(summary: pd.DataFrame) -> pd.DataFrame:
    """Difficulty sweeps (slide 11): tests that differ in one step's parameter only, three
    or more of them, with each method's median and mean rank at each value."""
    tests = list(dict.fromkeys(summary.test))
    groups: dict = {}
    for t in tests:
        for key, kind, value in _sweep_key(t):
            groups.setdefault(key, []).append((t, kind, value))
    rows = []
    for (rest, _i, kind), members in groups.items():
        if len({v for _, _, v in members}) < 3:
            continue
        family = ("jumble:RxR" if kind == "jumble" else f"{kind}:K") + "".join(f"+{r}" for r in rest)
        for t, _, value in members:
            for r in summary[summary.test == t].itertuples():
                rows.append({"family": family, "kind": kind, "parameter": value, "test": t,
                             "method": r.method, "median_rank": r.median_rank, "mean_rank": r.mean_rank,
                             "chance_mean_rank": r.chance_mean_rank})  # fmt: skip
    return pd.DataFrame(rows)


# -- markdown ----------------------------------------------------------------------------------


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


FMT = {"mean_rank": "{:.1f}", "median_rank": "{:g}", "recall_at_1": "{:.3f}", "recall_at_10": "{:.3f}",
       "micro_ap": "{:.4f}", "recall_at_p90": "{:.4f}", "queries": "{:,}", "distractor_queries": "{:,}",
       "median_rank_mean": "{:.2f}", "median_rank_std": "{:.2f}", "mean_rank_mean": "{:.1f}",
       "mean_rank_std": "{:.1f}", "mean_rank_per_1000": "{:.2f}", "median_rank_per_1000": "{:.2f}",
       "mean_rank_r2": "{:.3f}", "median_rank_r2": "{:.3f}", "size": "{:,}", "ci_low": "{:g}",
       "ci_high": "{:g}", "mean_rank_intercept": "{:.1f}", "chance_mean_rank": "{:,.1f}",
       "mean_rank_share": "{:.2%}", "median_rank_share": "{:.2%}", "chance_per_1000": "{:g}",
       "library_size": "{:,}", "final": "{:.4g}", "queries_run": "{:,}", "queries_needed": "{:,.0f}",
       "share_of_library": "{:.2%}", "p_value": "{:.3g}", "p_holm": "{:.3g}", "pairs": "{:,}",
       "differ": "{:,}", "subset_size": "{:,.0f}", "parameter": "{:g}"}  # fmt: skip


# -- plots -------------------------------------------------------------------------------------

MARKERS = "osD^vPX*<>"
LINES = ("-", "--", "-.", ":")


def _style(methods: list[str]) -> dict:
    """One colour, marker and line style per method, the same in every figure. Hollow
    markers shrink and lines thin from the first method to the last, so series with the
    same values (every method at rank 1, say) stay visible as concentric markers."""
    from matplotlib import colormaps

    colours = colormaps["tab10"].colors
    n = len(methods)
    return {m: {"color": colours[i % 10], "marker": MARKERS[i % len(MARKERS)],
                "linestyle": LINES[i % len(LINES)], "markersize": 4 + 2.5 * (n - 1 - i),
                "markerfacecolor": "none", "linewidth": 1 + 0.7 * (n - 1 - i)}
            for i, m in enumerate(methods)}  # fmt: skip


def _points(style: dict) -> dict:
    """A method's style for markers alone (no line)."""
    return {k: v for k, v in style.items() if k not in ("linestyle", "linewidth")} | {"linestyle": "none"}


def _log_x(ax, values) -> None:
    """A log x axis when the values span a decade or more; plain numbers on the ticks."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    values = np.asarray(values, dtype=float)
    if len(values) and values.min() > 0 and values.max() / values.min() >= 10:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())


def _figure(rows: int, cols: int, width: float, height: float, sharey="row", sharex=False):
    fig = Figure(figsize=(width * cols, height * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=sharey, sharex=sharex)
    return fig, axes


def _legend(fig: Figure, axes, n: int) -> None:
    """One legend for the figure, below the panels: it never covers a series."""
    handles, labels = [], []
    for ax in axes.ravel():
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    # as many columns as the figure is wide enough for: a legend wider than it is cut off
    ncol = max(1, min(len(labels), 5, int(fig.get_figwidth() // 1.7)))
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=8)




def _offsets(n: int, width: float = 0.5) -> np.ndarray:
    """Horizontal offsets that keep n series at one x apart (no point hides another)."""
    return (np.arange(n) - (n - 1) / 2) * (width / max(n, 1))


def figures(t: dict, n_refs: int) -> dict[str, Figure]:
    """The report's figures by file name, from its tables."""
    methods = list(dict.fromkeys(t["summary"].method))
    tests = list(dict.fromkeys(t["summary"].test))
    style = _style(methods)
    made = [
        _rank_distributions(t["ranks"], methods, tests, style, n_refs),
        _rank_summary(t["summary"], methods, tests, style),
        _queries_needed(t["queries_needed"], t["queries_needed_summary"], methods, tests, style),
    ]
    if "difficulty" in t:
        made.append(_difficulty(t["difficulty"], methods, style))
    if "sizes" in t:
        made.append(_rank_vs_size(t["sizes"], t["slopes"], methods, tests, style))
    if "stability" in t:
        made.append(_stability_points(t["stability"], t["stability_summary"], methods, tests, style))
    return dict(made)


def plots(stage: Path, t: dict, n_refs: int) -> list[str]:
    """The report's figures, saved in ``stage``: their file names."""
    made = figures(t, n_refs)
    for name, fig in made.items():
        fig.savefig(stage / name, dpi=110)
    return list(made)


def _rank_distributions(ranks, methods, tests, style, n_refs) -> str:
    """Share of queries whose original ranks at or below r (Howe's distributions as
    cumulative curves: recall at r), beside a random order's."""
    cols = min(len(tests), 4)
    rows = -(-len(tests) // cols)
    fig, axes = _figure(rows, cols, 3.6, 3.0, sharey=True)
    grid = np.unique(np.round(np.geomspace(1, max(n_refs, 2), 200)))
    for ax, test in zip(axes.ravel(), tests):
        for m in methods:
            r = np.sort(ranks[(ranks.method == m) & (ranks.test == test)]["rank"].to_numpy())
            if len(r):
                share = np.searchsorted(r, grid, side="right") / len(r)
                ax.plot(grid, share, label=m, markevery=(3 * methods.index(m), 20), **style[m])
        ax.plot(grid, grid / n_refs, color="grey", linestyle=":", label="chance (random order)")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_title(test, fontsize=9)
        ax.set_xlabel("rank of the original")
        ax.set_ylabel("share of queries ≤ rank")
    for ax in axes.ravel()[len(tests):]:
        ax.axis("off")
    _legend(fig, axes, len(methods))
    return "rank_distributions.png", fig


def _rank_summary(s, methods, tests, style) -> str:
    """Median and mean rank per method and test, log scale, chance drawn."""
    fig, axes = _figure(1, 2, 5.6, 3.6, sharey=True)
    x = np.arange(len(tests))
    shift = _offsets(len(methods))
    for ax, col in zip(axes[0], ("median_rank", "mean_rank")):
        for i, m in enumerate(methods):
            vals = [s[(s.method == m) & (s.test == tt)][col].iloc[0] for tt in tests]
            ax.plot(x + shift[i], vals, label=m, **_points(style[m]))
        chance = [s[s.test == tt].chance_mean_rank.iloc[0] for tt in tests]
        ax.hlines(chance, x - 0.4, x + 0.4, colors="grey", linestyles=":", label="chance (N+1)/2")
        ax.set_xticks(x)
        ax.set_xticklabels(tests, rotation=25, fontsize=8, ha="right")
        ax.set_yscale("log")
        ax.set_xlabel("test")
        ax.set_ylabel(col.replace("_", " ") + " (1 = found first)")
        ax.set_title(col.replace("_", " "), fontsize=10)
    _legend(fig, axes, len(methods))
    return "rank_summary.png", fig


def _difficulty(d, methods, style) -> str:
    """Slide 11: mean and median rank as a test's parameter moves towards harder."""
    families = list(dict.fromkeys(d.family))
    fig, axes = _figure(2, len(families), 4.2, 3.0, sharey="row")
    for c, family in enumerate(families):
        part = d[d.family == family]
        kind = part.kind.iloc[0]
        for r, col in enumerate(("median_rank", "mean_rank")):
            ax = axes[r, c]
            for m in methods:
                mm = part[part.method == m].sort_values("parameter")
                ax.plot(mm.parameter, mm[col], label=m, **style[m])
            chance = part.groupby("parameter").chance_mean_rank.first()
            ax.plot(chance.index, chance.to_numpy(), color="grey", linestyle=":", label="chance (N+1)/2")
            ax.set_yscale("log")
            if kind in ("crop", "lowcon", "resize", "jpeg", "bright"):
                ax.invert_xaxis()  # a smaller parameter is the harder test
            unit = "tiles" if kind == "jumble" else "parameter"
            ax.set_xlabel(f"{family}: {unit} (harder →)")
            ax.set_ylabel(col.replace("_", " "))
            ax.set_title(f"{family}: {col.replace('_', ' ')}", fontsize=9)
    _legend(fig, axes, len(methods))
    return "difficulty.png", fig


def _queries_needed(curve, needed, methods, tests, style) -> str:
    """Slide 14: how wide the 95 % interval is, relative to the final value, as queries are
    added; the dotted line is the ±10 % goal."""
    fig, axes = _figure(2, len(tests), 3.4, 2.8, sharey="row", sharex=True)
    for c, test in enumerate(tests):
        for r, stat in enumerate(rank_spec.STATISTICS):
            ax = axes[r, c]
            for m in methods:
                part = curve[(curve.method == m) & (curve.test == test) & (curve.statistic == stat)]
                if part.empty:
                    continue
                final = part.value.iloc[-1]
                width = np.maximum(part.ci_high / final - 1, 1 - part.ci_low / final) if final else part.ci_high * 0
                ax.plot(part.queries, 100 * width, label=m, markevery=(methods.index(m), 4), **style[m])
            ax.axhline(100 * rank_spec.TOLERANCE, color="grey", linestyle=":", label="±10 % goal")
            _log_x(ax, curve.queries)
            ax.set_ylim(0, 100)
            ax.set_title(f"{test}: {stat} rank", fontsize=9)
            ax.set_xlabel("queries run")
            ax.set_ylabel("95 % interval, ± % of final")
    _legend(fig, axes, len(methods))
    return "queries_needed.png", fig


def _rank_vs_size(sz, slopes, methods, tests, style) -> str:
    """Slide 13: mean and median rank against library size, fitted lines and chance."""
    fig, axes = _figure(2, len(tests), 3.4, 2.9, sharey="row", sharex=True)
    for c, test in enumerate(tests):
        for r, stat in enumerate(("mean", "median")):
            ax = axes[r, c]
            for m in methods:
                part = sz[(sz.method == m) & (sz.test == test)]
                ax.plot(part["size"], part[f"{stat}_rank"], label=m, **_points(style[m]))
                fit = slopes[(slopes.method == m) & (slopes.test == test)]
                per = fit[f"{stat}_rank_per_1000"].iloc[0] if len(fit) else None
                if per is not None and per == per:
                    xs = part["size"].to_numpy(dtype=float)
                    ys = per / 1000 * xs + fit[f"{stat}_rank_intercept"].iloc[0]
                    ax.plot(xs, np.where(ys > 0, ys, np.nan), color=style[m]["color"], linewidth=0.8,
                            linestyle=style[m]["linestyle"])  # fmt: skip
            chance = sz[sz.test == test].groupby("size").chance_mean_rank.first()
            ax.plot(chance.index, chance.to_numpy(), color="grey", linestyle=":", label="chance (N+1)/2")
            ax.set_yscale("log")
            ax.set_title(f"{test}: {stat} rank", fontsize=9)
            ax.set_xlabel("library size (images)")
            ax.set_ylabel(f"{stat} rank")
    _legend(fig, axes, len(methods))
    return "rank_vs_size.png", fig


def _stability_points(st, across, methods, tests, style) -> str:
    """Slide 12: each subset's figure as a point, their mean ± standard deviation beside."""
    fig, axes = _figure(2, len(tests), 3.0, 2.9, sharey="row")
    x = np.arange(len(methods))
    for c, test in enumerate(tests):
        for r, stat in enumerate(("median", "mean")):
            ax = axes[r, c]
            for i, m in enumerate(methods):
                pts = st[(st.method == m) & (st.test == test)][f"{stat}_rank"].dropna().to_numpy()
                jitter = _offsets(len(pts), 0.3) - 0.12
                ax.plot(x[i] + jitter, pts, label=m, **(_points(style[m]) | {"markersize": 5}))
                a = across[(across.method == m) & (across.test == test)]
                mean, sd = a[f"{stat}_rank_mean"].iloc[0], a[f"{stat}_rank_std"].iloc[0]
                ax.errorbar(x[i] + 0.22, mean, yerr=0 if sd != sd or sd is None else sd, color="black",
                            marker="_", markersize=10, capsize=3, linewidth=1,
                            label="mean ± s.d. of subsets")  # fmt: skip
            ax.set_xticks(x)
            ax.set_xticklabels(methods, rotation=25, fontsize=8, ha="right")
            ax.set_yscale("log")
            ax.set_title(f"{test}: {stat} rank per subset", fontsize=9)
            ax.set_xlabel("method")
            ax.set_ylabel(f"{stat} rank in subset")
    _legend(fig, axes, len(methods))
    return "stability.png", fig


# -- the library -------------------------------------------------------------------------------


def library_about(patterns: list[str], paths: list[str] = ()) -> dict:
    """What the references are: make_library's library.json when the bench's images came
    from one (generator and settings), else the folders or globs as given. The folder is
    looked for from the globs make_queries was given and from the references' own paths
    (the globs may be relative to another working folder)."""
    import os

    candidates = list(patterns)
    if len(paths):
        try:
            candidates.append(os.path.commonpath([os.path.dirname(p) for p in paths]))
        except ValueError:  # paths on different drives or mixed absolute and relative
            pass
    for pattern in candidates:
        base = Path(re.split(r"[*?\[]", pattern, maxsplit=1)[0] or ".")
        for folder in (base, *list(base.parents)[:2]):
            doc = folder / "library.json"
            if doc.is_file():
                try:
                    about = json.loads(doc.read_text())
                except ValueError:
                    continue
                return {"source": str(folder), **about, "text": _library_text(str(folder), about)}
    return {"source": ", ".join(patterns),
            "text": f"a collection of image files ({', '.join(patterns)}); not written by make_library"}  # fmt: skip


def _library_text(folder: str, a: dict) -> str:
    parts = [f"make_library output `{folder}`: {a.get('size', '?'):,} images"]
    if "photos" in a:
        parts.append(f"{a['photos']} photographs shipped by scikit-image")
    kind = a.get("leaves", "deadleaves")
    count = a.get("deadleaves", 0)
    if kind == "textured":
        parts.append(f"{count:,} textured dead-leaves images {a.get('width')}×{a.get('height')} (leaves "
                     f"filled with windows of {len(a.get('patch_sources', []))} shipped photographs; "
                     f"seed {a.get('seed')})")  # fmt: skip
    else:
        parts.append(f"{count:,} dead-leaves images with one random palette each "
                     f"{a.get('width')}×{a.get('height')} (seed {a.get('seed')})")  # fmt: skip
    return "; ".join(parts)


# -- the report --------------------------------------------------------------------------------


def write(stage: Path, queries, ranked, micro, method_info, lay, job, bench) -> dict:
    """Tables, plots, report.md and rank_eval.json in ``stage``; the JSON document."""
    n_refs = len(bench.references)
    metrics = {m["method"]: m["metric"] for m in method_info}
    t = tables(queries, ranked, micro, lay, job, n_refs, metrics)
    for name, table in t.items():
        _save(stage, name, table)
    pictures = plots(stage, t, n_refs)
    library = library_about(list(bench.settings.get("library", [])), list(bench.references.path))
    s = t["summary"]
    lines = winners(s, t["comparisons"])
    (stage / "report.md").write_text(_markdown(t, pictures, queries, method_info, lay, job, bench, library, lines))
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
    (stage / "rank_eval.json").write_text(json.dumps(document, indent=2) + "\n")
    return document


def _markdown(t: dict, pictures, queries, method_info, lay, job, bench, library, lines) -> str:
    s = t["summary"]
    n_refs = len(bench.references)
    ties = ("pessimistic: a reference tied with the original counts against the method, as DISC21 "
            "scores ties" if job.ties == "pessimistic" else
            "mid-rank: a tie group of k references shares the mean of its k places")  # fmt: skip
    md = [f"# Rank of the original and μAP: {bench.folder.name}", ""]
    md.append(f"**Library**: {library['text']}.")
    md.append("")
    md.append(f"{n_refs:,} references (chance mean rank (N+1)/2 = {rank_spec.chance_mean_rank(n_refs):,.1f}), "
              f"{len(queries):,} queries ({int((queries.reference_id == '').sum()):,} distractors), tests "
              f"{', '.join(dict.fromkeys(queries.test))}; kNN {job.knn} pairs per query for μAP. "
              "Rank = number of references scoring at least as well as the original (1 = first); "
              f"ties: {ties}.")  # fmt: skip
    md += ["", "## Methods", ""]
    md += [f"- `{m['method']}` ({m['dim']} dims, compared by {DISTANCES.get(m['metric'], m['metric'])}): "
           f"{m['reference']}" for m in method_info]  # fmt: skip
    md += ["", "## Who wins", ""] + [f"- {line}" for line in lines]
    md += ["", f"Paired tests: Wilcoxon signed-rank on the per-query ranks, the best method against "
           f"each other one, Holm-adjusted over a test's comparisons (comparisons.csv). A method "
           f"is **at chance** when its mean rank is within {rank_spec.CHANCE_Z} standard errors of "
           "a random order's (N+1)/2, or above it."]  # fmt: skip
    md += ["", "## Rank of the original (Howe 2000) and μAP (DISC21)", ""]
    md.append(_markdown_table(s, ["method", "test", "queries", "median_rank", "mean_rank", "chance_mean_rank",
                                  "median_rank_share", "mean_rank_share", "at_chance", "recall_at_1",
                                  "recall_at_10", "micro_ap"], FMT))  # fmt: skip
    sections = []
    if "stability_summary" in t:
        sections.append((
            "Stability across disjoint library subsets",
            f"{job.subsets} subsets of about {n_refs // job.subsets:,} references; each query is "
            "ranked within the subset holding its original (Howe: crop-50 on three sets of 6,000, "
            "median ranks 5, 5, 7, mean 5.7 ± 1.2).",
            t["stability_summary"],
            ["subset_size", "chance_mean_rank", "median_rank_mean", "median_rank_std", "mean_rank_mean",
             "mean_rank_std"],
        ))  # fmt: skip
    if "slopes" in t:
        sections.append((
            "Growth with library size",
            f"Sizes {', '.join(f'{x:,}' for x in lay.sizes)}: every size holds all the originals, "
            "then other references in a seeded order; least-squares lines through the means and "
            "medians (R² only where the ranks vary). A method at chance grows like chance: "
            f"{CHANCE_SLOPE_PER_1000:g} per 1,000 images.",
            t["slopes"],
            ["mean_rank_per_1000", "mean_rank_r2", "median_rank_per_1000", "median_rank_r2", "chance_per_1000"],
        ))  # fmt: skip
    qn = t["queries_needed_summary"]
    if not qn.empty:
        sections.append((
            "Queries needed",
            "Queries added in a seeded order; the fewest after which the 95 % bootstrap interval "
            f"({job.resamples} resamples) stays within ±{rank_spec.TOLERANCE:.0%} of the final value, "
            "as a count and a share of the library (– : not reached with the queries run). The "
            "curves are in queries_needed.csv.",
            qn, ["statistic", "final", "queries_run", "queries_needed", "share_of_library"],
        ))  # fmt: skip
    if "difficulty" in t:
        sections.append((
            "Difficulty sweeps",
            "Tests that differ in one parameter only (Howe's slide 11): median and mean rank as "
            "the alteration grows; difficulty.png draws them on log axes.",
            t["difficulty"], ["family", "parameter", "median_rank", "mean_rank", "chance_mean_rank"],
        ))  # fmt: skip
    for heading, intro, table, columns in sections:
        md += [f"## {heading}", "", intro, ""]
        lead = ["method", "test"] if heading != "Difficulty sweeps" else ["method"]
        md.append(_markdown_table(table, lead + columns, FMT))
    md += ["## Plots", ""] + [f"![{p}]({p})" for p in pictures] + [""]
    return "\n".join(md)


def records(table: pd.DataFrame) -> list[dict]:
    """Rows for JSON with every digit (pandas' to_json keeps 10), NaN as null."""
    rows = table.astype(object).where(table.notna(), None).to_dict(orient="records")
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in rows]


def stdout_table(document: dict) -> str:
    s = pd.DataFrame(document["summary"])
    lines = [f"{'method':<14} {'test':<22} {'median':>7} {'mean':>8} {'chance':>8} {'mean/N':>7} "
             f"{'R@1':>6} {'R@10':>6} {'μAP':>7}"]  # fmt: skip
    for r in s.itertuples():
        def f(v, spec):
            return "–" if v is None or v != v else format(v, spec)
        mark = "  at chance" if getattr(r, "at_chance", False) else ""
        lines.append(f"{r.method:<14} {r.test:<22} {f(r.median_rank, '7g')} {f(r.mean_rank, '8.1f')} "
                     f"{f(r.chance_mean_rank, '8.1f')} {f(r.mean_rank_share, '7.2%')} "
                     f"{f(r.recall_at_1, '6.3f')} {f(r.recall_at_10, '6.3f')} {f(r.micro_ap, '7.4f')}{mark}")  # fmt: skip
    return "\n".join(lines + [""] + document["winners"] + ["", f"library: {document['library']['text']}",
                                                            f"ties: {document['ties']}"])
