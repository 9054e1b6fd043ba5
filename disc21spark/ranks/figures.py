"""rank_eval's figures: rank distributions, summaries, queries needed, difficulty, growth
with library size and stability, one style per method across all of them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from disc21spark.ranks import spec as rank_spec

MARKERS = "osD^vPX*<>"
LINES = ("-", "--", "-.", ":")


def _style(methods: list[str]) -> dict:
    """One colour, marker and line style per method, the same in every figure. Hollow
    markers shrink and lines thin from the first method to the last, so series with the
    same values (every method at rank 1, say) stay visible as concentric markers."""
    from matplotlib import colormaps

    colours = colormaps["tab10"].colors
    n = len(methods)
    return {
        m: {
            "color": colours[i % 10],
            "marker": MARKERS[i % len(MARKERS)],
            "linestyle": LINES[i % len(LINES)],
            "markersize": 4 + 2.5 * (n - 1 - i),
            "markerfacecolor": "none",
            "linewidth": 1 + 0.7 * (n - 1 - i),
        }
        for i, m in enumerate(methods)
    }


def _points(style: dict) -> dict:
    """A method's style for markers alone (no line)."""
    return {k: v for k, v in style.items() if k not in ("linestyle", "linewidth")} | {
        "linestyle": "none"
    }


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
        made.append(
            _stability_points(t["stability"], t["stability_summary"], methods, tests, style)
        )
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
        _label(ax, test, "rank of the original", "share of queries ≤ rank")
    for ax in axes.ravel()[len(tests) :]:
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
        _label(ax, col.replace("_", " "), "test", col.replace("_", " ") + " (1 = found first)", 10)
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
            ax.plot(
                chance.index, chance.to_numpy(), color="grey", linestyle=":", label="chance (N+1)/2"
            )
            ax.set_yscale("log")
            if kind in ("crop", "lowcon", "resize", "jpeg", "bright"):
                ax.invert_xaxis()  # a smaller parameter is the harder test
            unit = "tiles" if kind == "jumble" else "parameter"
            title = f"{family}: {col.replace('_', ' ')}"
            _label(ax, title, f"{family}: {unit} (harder →)", col.replace("_", " "))
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
                width = (
                    np.maximum(part.ci_high / final - 1, 1 - part.ci_low / final)
                    if final
                    else part.ci_high * 0
                )
                ax.plot(
                    part.queries, 100 * width, label=m, markevery=(methods.index(m), 4), **style[m]
                )
            ax.axhline(100 * rank_spec.TOLERANCE, color="grey", linestyle=":", label="±10 % goal")
            _log_x(ax, curve.queries)
            ax.set_ylim(0, 100)
            _label(ax, f"{test}: {stat} rank", "queries run", "95 % interval, ± % of final")
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
                    ax.plot(
                        xs,
                        np.where(ys > 0, ys, np.nan),
                        color=style[m]["color"],
                        linewidth=0.8,
                        linestyle=style[m]["linestyle"],
                    )
            chance = sz[sz.test == test].groupby("size").chance_mean_rank.first()
            ax.plot(
                chance.index, chance.to_numpy(), color="grey", linestyle=":", label="chance (N+1)/2"
            )
            ax.set_yscale("log")
            _label(ax, f"{test}: {stat} rank", "library size (images)", f"{stat} rank")
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
                ax.errorbar(
                    x[i] + 0.22,
                    mean,
                    yerr=0 if sd != sd or sd is None else sd,
                    color="black",
                    marker="_",
                    markersize=10,
                    capsize=3,
                    linewidth=1,
                    label="mean ± s.d. of subsets",
                )
            ax.set_xticks(x)
            ax.set_xticklabels(methods, rotation=25, fontsize=8, ha="right")
            ax.set_yscale("log")
            _label(ax, f"{test}: {stat} rank per subset", "method", f"{stat} rank in subset")
    _legend(fig, axes, len(methods))
    return "stability.png", fig


def _label(ax, title: str, xlabel: str, ylabel: str, size: int = 9) -> None:
    """A panel's title (``size`` points) and axis labels."""
    ax.set_title(title, fontsize=size)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
